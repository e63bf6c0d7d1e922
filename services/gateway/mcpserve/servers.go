package mcpserve

import (
	"net/http"

	"google.golang.org/protobuf/proto"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/names"
	"github.com/switchboard-run/switchboard/services/gateway/internal/httperr"
)

// One client's endpoint (docs/mcp.md, "One server's endpoint"): the tools,
// prompts and resources of one client of the workspace under their own
// names, unprefixed, as a thin proxy in front of that one server serves
// them. Its view is made on the first request and kept like a group's, in
// Mirror.groups under serverKey, so every listing after reaches it.

// UnknownServer is the refusal of a client the workspace does not serve
// (not a member, or presenting nothing now).
func UnknownServer(ws, client string) error {
	return httperr.New(http.StatusNotFound, "unknown server %q in workspace %q: no client of that name presents a tool, prompt or resource there", client, ws)
}

// serverKey is a client's view's key among the groups': a group name never
// holds a slash.
func serverKey(client string) string { return "servers/" + client }

// serverView returns the view of client, making it on first use; a client
// that presents nothing in the workspace is refused until its view exists.
func (m *Mirror) serverView(client string) (*view, error) {
	if names.CheckClient(client) != nil {
		return nil, UnknownServer(m.ws, client)
	}
	m.gmu.Lock()
	defer m.gmu.Unlock()
	v := m.groups[serverKey(client)]
	if v != nil {
		return v, nil
	}
	tools := m.presentBy(client)
	if _, catalog := m.cat[client]; len(tools) == 0 && !catalog {
		return nil, UnknownServer(m.ws, client)
	}
	v = m.newView("", client)
	m.groups[serverKey(client)] = v
	v.apply(tools)
	v.applyCatalog(m.cat)
	return v, nil
}

// presentBy is the last listing's tools of client under their own names.
// Call with m.gmu held.
func (m *Mirror) presentBy(client string) []*registryv1.PresentedTool {
	var out []*registryv1.PresentedTool
	for _, p := range m.list {
		if p.GetClient() == client {
			own := proto.CloneOf(p)
			own.PresentedName = p.GetTool().GetName()
			out = append(out, own)
		}
	}
	return out
}
