package act

import (
	"context"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/registryview"
)

// clients is the clients act: every client of the workspace with its tools
// as advertised, or, through a group, only the tools the group presents.
// Every page of the workspace is read, so the reply keeps its one shape
// (docs/design.md §2) however large the workspace grows.
func (h Handler) clients(ctx context.Context, req *Request) ([]byte, error) {
	if req.Group != nil {
		// The group first: an unknown group is refused with its own words
		// before the workspace's listing is read.
		all, shown, err := h.present(ctx, req.Group)
		if err != nil {
			return nil, err
		}
		rows, err := registryview.Clients(ctx, h.Registry, req.Clients.GetWorkspace())
		if err != nil {
			return nil, err
		}
		rows, aliases := groupRows(rows, all, shown)
		return encodeClients(&registryv1.ListClientsResponse{Rows: rows}, aliases)
	}
	rows, err := registryview.Clients(ctx, h.Registry, req.Clients.GetWorkspace())
	if err != nil {
		return nil, err
	}
	return EncodeClients(&registryv1.ListClientsResponse{Rows: rows})
}

// toolKey names a tool as an invoke does: its client and its own name.
type toolKey struct{ client, tool string }

// groupRows keeps, of rows, the tools the group presents (shown), each
// with the group's description, and the clients holding at least one: a
// client with none is outside the group, so absent. aliases maps a tool
// the group shows under a name other than its workspace's (all) to that
// alias. A row's tools keep their
// advertised order; a tool keeps its own name, the one invoke takes.
func groupRows(rows []*registryv1.ClientRow, all, shown []*registryv1.PresentedTool) ([]*registryv1.ClientRow, map[toolKey]string) {
	inWorkspace := make(map[toolKey]string, len(all))
	for _, p := range all {
		inWorkspace[toolKey{p.GetClient(), p.GetTool().GetName()}] = p.GetPresentedName()
	}
	byTool := make(map[toolKey]*registryv1.PresentedTool, len(shown))
	for _, p := range shown {
		byTool[toolKey{p.GetClient(), p.GetTool().GetName()}] = p
	}
	aliases := map[toolKey]string{}
	out := make([]*registryv1.ClientRow, 0, len(rows))
	for _, row := range rows {
		var tools []*registryv1.Tool
		for _, t := range row.GetTools() {
			k := toolKey{row.GetClient(), t.GetName()}
			p, ok := byTool[k]
			if !ok {
				continue
			}
			if p.GetPresentedName() != inWorkspace[k] {
				aliases[k] = p.GetPresentedName()
			}
			tools = append(tools, p.GetTool())
		}
		if len(tools) == 0 {
			continue
		}
		out = append(out, &registryv1.ClientRow{Client: row.GetClient(), Present: row.GetPresent(), Tools: tools, LastSeen: row.GetLastSeen()})
	}
	return out, aliases
}
