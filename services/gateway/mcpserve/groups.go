package mcpserve

import (
	"context"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/toolgroups"
	"github.com/switchboard-run/switchboard/services/gateway/internal/httperr"
)

// Tool groups (docs/mcp.md, "Tool groups"): a group's view holds the tools
// its rule (kit/suite/toolgroups) admits, under the names and descriptions it
// gives them. It is made on the group's first request and kept by every
// listing after, so a new advertisement or an edit of the group reaches the
// group's clients as list_changed.

// UnknownGroup is the refusal of a group the workspace does not hold (or
// no longer does).
func UnknownGroup(ws, group string) error {
	return httperr.New(http.StatusNotFound, "unknown group %q in workspace %q", group, ws)
}

// Group returns the MCP server of group, making it on first use.
func (m *Mirror) Group(group string) (*mcp.Server, error) {
	v, err := m.groupView(group)
	if err != nil {
		return nil, err
	}
	return v.server, nil
}

// groupView returns the view of group, making it on first use.
func (m *Mirror) groupView(group string) (*view, error) {
	m.gmu.Lock()
	defer m.gmu.Unlock()
	g := m.rules[group]
	if g == nil {
		return nil, UnknownGroup(m.ws, group)
	}
	v := m.groups[group]
	if v == nil {
		v = m.newView(group, "")
		m.groups[group] = v
		v.apply(m.presentIn(g))
		v.applyCatalog(m.cat)
	}
	return v, nil
}

// presentIn is the last listing as group g presents it. A group the
// registry stored always compiles; one that does not (stored by another
// version) presents nothing, and says so in the log. Call with m.gmu held.
func (m *Mirror) presentIn(g *registryv1.Group) []*registryv1.PresentedTool {
	rule, err := toolgroups.Compile(g)
	if err != nil {
		m.log.Warn("a tool group the gateway cannot read presents no tool", "group", g.GetName(), "err", err)
		return nil
	}
	return rule.Present(m.list)
}

// listGroups reads the workspace's groups.
func (m *Mirror) listGroups(ctx context.Context) (map[string]*registryv1.Group, error) {
	res, err := m.opts.Registry.ListGroups(m.opts.Self(ctx), &registryv1.ListGroupsRequest{Workspace: m.ws})
	switch {
	case status.Code(err) == codes.NotFound:
		return map[string]*registryv1.Group{}, nil
	case err != nil:
		return nil, fmt.Errorf("listing the groups of workspace %q: %w", m.ws, err)
	}
	out := make(map[string]*registryv1.Group, len(res.GetGroups()))
	for _, g := range res.GetGroups() {
		out[g.GetName()] = g
	}
	return out, nil
}

// applyAll puts a listing and the groups in force in every view. A group
// that was removed keeps its view, empty, so its sessions hear that its
// tools are gone; new requests for it are refused (Group).
func (m *Mirror) applyAll(list []*registryv1.PresentedTool, rules map[string]*registryv1.Group, held []*registryv1.Pin) {
	m.gmu.Lock()
	defer m.gmu.Unlock()
	m.list, m.rules, m.held = list, rules, held
	m.all.apply(list)
	for name, v := range m.groups {
		if v.client != "" {
			v.apply(m.presentBy(v.client))
		} else if g := rules[name]; g != nil {
			v.apply(m.presentIn(g))
		} else {
			v.apply(nil)
		}
		v.applyCatalog(m.cat) // a group serves the catalogs of the clients it presents tools of
	}
}

// idle reports whether no session is open on any of the mirror's views.
func (m *Mirror) idle() bool {
	if !m.all.idle() {
		return false
	}
	m.gmu.Lock()
	defer m.gmu.Unlock()
	for _, v := range m.groups {
		if !v.idle() {
			return false
		}
	}
	return true
}

// groupAllowed refuses a caller limited to tool groups the endpoint of its
// workspace (group "") and any group outside its limit, which is absent:
// the sentence of a group that does not exist (docs/security.md).
func groupAllowed(id identity.Identity, ws, group string) error {
	if toolgroups.Allows(id.Groups, group) {
		return nil
	}
	if group == "" {
		return httperr.New(http.StatusForbidden, "%s", toolgroups.Limited(id.Name, id.Groups))
	}
	return UnknownGroup(ws, group)
}
