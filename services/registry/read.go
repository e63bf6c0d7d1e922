package registry

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/pins"
	"github.com/switchboard-run/switchboard/services/registry/internal/pages"
)

// unknownWorkspace answers a workspace nobody registered a client in. An
// invalid name gets the same bytes: nobody could have created it either;
// and so does a workspace the caller may not see (docs/design.md §4).
func unknownWorkspace(ws string) error {
	return status.Errorf(codes.NotFound, "unknown workspace %q", ws)
}

// noClient answers a client that does not exist, or that the caller may
// not see.
func noClient(c string) error {
	return status.Errorf(codes.NotFound, "no client %q: it advertises no tools and belongs to no workspace", c)
}

// noPresentedTool answers a presented name nobody holds, or one the caller
// may not see.
func noPresentedTool(name string) error {
	return status.Errorf(codes.NotFound,
		"no tool is presented as %q right now; list the workspace's tools for the names in force", name)
}

// row is client's row at the moment of asking. Call with s.mu held.
func (s *state) row(client string) *registryv1.ClientRow {
	r := &registryv1.ClientRow{Client: client, Present: s.present[client] != nil}
	if a := s.adverts[client]; a != nil {
		r.Tools = a.tools
	}
	if t, ok := s.lastSeen(client); ok {
		r.LastSeen = timestamppb.New(t)
	}
	return r
}

// ListClients lists a page of the clients registered in a workspace the
// caller may see, sorted by client, joined with their tools and presence at
// the moment of asking.
func (s *Service) ListClients(ctx context.Context, req *registryv1.ListClientsRequest) (*registryv1.ListClientsResponse, error) {
	ws, st := req.GetWorkspace(), s.st
	members, err := st.lockMembers(ctx, ws)
	if err != nil {
		return nil, err
	}
	defer st.mu.Unlock()
	p, err := pageOf(pages.Clients, ws, req.GetPageSize(), req.GetPageToken())
	if err != nil {
		return nil, err
	}
	rows, next := fill(p, pages.Clients, ws, sortedKeys(members), func(c string) string { return c }, st.row)
	return &registryv1.ListClientsResponse{Rows: rows, NextPageToken: next}, nil
}

// ListTools lists a page of the tools of a workspace's clients, for a
// workspace the caller may see, under their presented names, sorted by
// presented name.
func (s *Service) ListTools(ctx context.Context, req *registryv1.ListToolsRequest) (*registryv1.ListToolsResponse, error) {
	ws, st := req.GetWorkspace(), s.st
	if _, err := st.lockMembers(ctx, ws); err != nil {
		return nil, err
	}
	defer st.mu.Unlock()
	p, err := pageOf(pages.Tools, ws, req.GetPageSize(), req.GetPageToken())
	if err != nil {
		return nil, err
	}
	idx := st.toolsOf(ws)
	tools, next := fill(p, pages.Tools, ws, idx.refs, func(r toolRef) string { return r.name }, func(r toolRef) *registryv1.PresentedTool {
		return &registryv1.PresentedTool{PresentedName: r.name, Client: r.client, Tool: r.tool, Present: st.present[r.client] != nil, Changed: r.changed}
	})
	return &registryv1.ListToolsResponse{Tools: tools, NextPageToken: next}, nil
}

// ResolveTool maps a presented name back to the pair to invoke, for a tool
// of a client the caller may see.
func (s *Service) ResolveTool(ctx context.Context, req *registryv1.ResolveToolRequest) (*registryv1.ResolveToolResponse, error) {
	_, sees, err := s.st.caller(ctx)
	if err != nil {
		return nil, err
	}
	st := s.st
	st.mu.Lock()
	defer st.mu.Unlock()
	p, ok := st.byName[req.GetPresentedName()]
	if !ok || !st.visible(sees, p.client) {
		return nil, noPresentedTool(req.GetPresentedName())
	}
	if held := st.heldFor(sees, p.client, p.tool.GetName()); held != nil {
		return nil, status.Error(codes.FailedPrecondition, pins.Refusal(held))
	}
	return &registryv1.ResolveToolResponse{Client: p.client, Tool: p.tool}, nil
}

// GetClient reads one client's row and the workspaces it belongs to that
// the caller may see.
func (s *Service) GetClient(ctx context.Context, req *registryv1.GetClientRequest) (*registryv1.GetClientResponse, error) {
	_, sees, err := s.st.caller(ctx)
	if err != nil {
		return nil, err
	}
	st := s.st
	st.mu.Lock()
	defer st.mu.Unlock()
	c := req.GetClient()
	if (st.adverts[c] == nil && len(st.joined[c]) == 0) || !st.visible(sees, c) {
		return nil, noClient(c)
	}
	var workspaces []string
	for _, ws := range sortedKeys(st.joined[c]) {
		if sees.Sees(ws) {
			workspaces = append(workspaces, ws)
		}
	}
	res := &registryv1.GetClientResponse{Row: st.row(c), Workspaces: workspaces}
	for _, ws := range workspaces {
		for _, tool := range sortedKeys(st.pinned[ws][c]) {
			if p := st.pinned[ws][c][tool]; !pins.Served(p.GetState()) {
				res.Held = append(res.Held, p)
			}
		}
	}
	return res, nil
}
