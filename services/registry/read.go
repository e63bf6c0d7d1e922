package registry

import (
	"context"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
)

// unknownWorkspace answers a workspace nobody registered a client in. An
// invalid name gets the same bytes: nobody could have created it either.
func unknownWorkspace(ws string) error {
	return status.Errorf(codes.NotFound, "unknown workspace %q", ws)
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

// ListClients lists the clients registered in a workspace, sorted by
// client, joined with their tools and presence at the moment of asking.
func (s *Service) ListClients(_ context.Context, req *registryv1.ListClientsRequest) (*registryv1.ListClientsResponse, error) {
	st := s.st
	st.mu.Lock()
	defer st.mu.Unlock()
	members := st.members[req.GetWorkspace()]
	if len(members) == 0 {
		return nil, unknownWorkspace(req.GetWorkspace())
	}
	out := &registryv1.ListClientsResponse{Rows: make([]*registryv1.ClientRow, 0, len(members))}
	for _, c := range sortedKeys(members) {
		out.Rows = append(out.Rows, st.row(c))
	}
	return out, nil
}

// ListTools lists every tool of a workspace's clients under its presented
// name, sorted by presented name.
func (s *Service) ListTools(_ context.Context, req *registryv1.ListToolsRequest) (*registryv1.ListToolsResponse, error) {
	st := s.st
	st.mu.Lock()
	members := st.members[req.GetWorkspace()]
	if len(members) == 0 {
		st.mu.Unlock()
		return nil, unknownWorkspace(req.GetWorkspace())
	}
	var tools []*registryv1.PresentedTool
	for c := range members {
		a := st.adverts[c]
		if a == nil {
			continue
		}
		present := st.present[c] != nil
		for i, t := range a.tools {
			tools = append(tools, &registryv1.PresentedTool{PresentedName: a.names[i], Client: c, Tool: t, Present: present})
		}
	}
	st.mu.Unlock()
	// Sorting needs nothing the lock guards; it runs after the lock is
	// released so a large workspace does not hold up advertisers.
	slices.SortFunc(tools, func(a, b *registryv1.PresentedTool) int {
		return strings.Compare(a.PresentedName, b.PresentedName)
	})
	return &registryv1.ListToolsResponse{Tools: tools}, nil
}

// ResolveTool maps a presented name back to the pair to invoke.
func (s *Service) ResolveTool(_ context.Context, req *registryv1.ResolveToolRequest) (*registryv1.ResolveToolResponse, error) {
	st := s.st
	st.mu.Lock()
	defer st.mu.Unlock()
	p, ok := st.byName[req.GetPresentedName()]
	if !ok {
		return nil, status.Errorf(codes.NotFound,
			"no tool is presented as %q right now; list the workspace's tools for the names in force", req.GetPresentedName())
	}
	return &registryv1.ResolveToolResponse{Client: p.client, Tool: p.tool}, nil
}

// GetClient reads one client's row and the workspaces it belongs to.
func (s *Service) GetClient(_ context.Context, req *registryv1.GetClientRequest) (*registryv1.GetClientResponse, error) {
	st := s.st
	st.mu.Lock()
	defer st.mu.Unlock()
	c := req.GetClient()
	if st.adverts[c] == nil && len(st.joined[c]) == 0 {
		return nil, status.Errorf(codes.NotFound, "no client %q: it advertises no tools and belongs to no workspace", c)
	}
	return &registryv1.GetClientResponse{Row: st.row(c), Workspaces: sortedKeys(st.joined[c])}, nil
}
