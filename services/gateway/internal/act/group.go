package act

import (
	"context"
	"net/http"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/names"
	"github.com/switchboard-run/switchboard/kit/suite/registryview"
	"github.com/switchboard-run/switchboard/kit/suite/toolgroups"
	"github.com/switchboard-run/switchboard/services/gateway/internal/httperr"
)

// Group is a tool group an invoke is made through (docs/mcp.md, "Tool
// groups"): "group": "<workspace>/<group>". The tool must be one the group
// presents, or it is absent.
type Group struct {
	Workspace, Name string
}

// parseGroup reads "<workspace>/<group>".
func parseGroup(s string) (*Group, error) {
	ws, name, ok := strings.Cut(s, "/")
	if !ok || names.CheckWorkspace(ws) != nil || toolgroups.CheckName(name) != nil {
		return nil, refuse(`group %s is not "<workspace>/<group>" (a workspace name, a slash, a group name of [a-z0-9-])`, quote(s))
	}
	return &Group{Workspace: ws, Name: name}, nil
}

// limit refuses an act a caller limited to tool groups may not make: it
// may invoke and list clients through one of its groups and collect its
// captures, nothing else (docs/security.md).
func limit(id identity.Identity, req *Request) error {
	if len(id.Groups) == 0 || req.Op == OpCapture {
		return nil
	}
	if (req.Op != OpInvoke && req.Op != OpClients) || req.Group == nil {
		return httperr.New(http.StatusForbidden, "%s", toolgroups.Limited(id.Name, id.Groups))
	}
	if !toolgroups.Allows(id.Groups, req.Group.Name) {
		// Outside its groups a group is absent, with the registry's words.
		return status.Errorf(codes.NotFound, "unknown group %q in workspace %q", req.Group.Name, req.Group.Workspace)
	}
	return nil
}

// throughGroup refuses an invoke of a tool its group does not present, with
// the mailbox's sentence for a tool nobody advertises: outside the group
// the tool is absent.
func (h Handler) throughGroup(ctx context.Context, g *Group, invoke *mailboxv1.InvokeRequest) error {
	_, shown, err := h.present(ctx, g)
	if err != nil {
		return err
	}
	for _, p := range shown {
		if p.GetClient() == invoke.GetClient() && p.GetTool().GetName() == invoke.GetTool() {
			return nil
		}
	}
	return status.Errorf(codes.NotFound, "client %q advertises no tool %q right now", invoke.GetClient(), invoke.GetTool())
}

// present is what g presents of its workspace: the workspace's tools, and
// the group's as it shows them (under an alias, with a description
// override). The group is read as the caller (a workspace it may not see
// holds no group it may name), and so is the workspace's listing: a tool's
// client must be a member of the group's workspace.
func (h Handler) present(ctx context.Context, g *Group) (all, shown []*registryv1.PresentedTool, err error) {
	res, err := h.Registry.GetGroup(ctx, &registryv1.GetGroupRequest{Workspace: g.Workspace, Name: g.Name})
	if err != nil {
		return nil, nil, err
	}
	rule, err := toolgroups.Compile(res.GetGroup())
	if err != nil {
		return nil, nil, status.Errorf(codes.FailedPrecondition, "group %q of workspace %q cannot be read by this gateway: %v", g.Name, g.Workspace, err)
	}
	all, err = registryview.Tools(ctx, h.Registry, g.Workspace)
	if err != nil && status.Code(err) != codes.NotFound {
		return nil, nil, err
	}
	return all, rule.Present(all), nil
}
