package registry

import (
	"context"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
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

// page is a checked page request: where it starts and how much it holds.
type page struct {
	after string
	size  int
	bytes int
}

// pageOf checks a page request of listing for workspace.
func pageOf(listing pages.Listing, workspace string, size int32, token string) (page, error) {
	n, err := pages.Size(size)
	if err != nil {
		return page{}, status.Error(codes.InvalidArgument, err.Error())
	}
	after, err := pages.After(token, listing, workspace)
	if err != nil {
		return page{}, status.Error(codes.InvalidArgument, err.Error())
	}
	return page{after: after, size: n}, nil
}

// full reports whether the page can take no more once it holds n items, the
// last of which is m: it holds its size, or its bytes.
func (p *page) full(n int, m proto.Message) bool {
	p.bytes += proto.Size(m)
	return n >= p.size || p.bytes >= pages.MaxBytes
}

// ListClients lists a page of the clients registered in a workspace the
// caller may see, sorted by client, joined with their tools and presence at
// the moment of asking.
func (s *Service) ListClients(ctx context.Context, req *registryv1.ListClientsRequest) (*registryv1.ListClientsResponse, error) {
	ws := req.GetWorkspace()
	_, sees, err := s.st.caller(ctx)
	if err != nil {
		return nil, err
	}
	st := s.st
	st.mu.Lock()
	defer st.mu.Unlock()
	members := st.members[ws]
	if len(members) == 0 || !sees.Sees(ws) {
		return nil, unknownWorkspace(ws)
	}
	p, err := pageOf(pages.Clients, ws, req.GetPageSize(), req.GetPageToken())
	if err != nil {
		return nil, err
	}
	out := &registryv1.ListClientsResponse{}
	clients := sortedKeys(members)
	i, _ := slices.BinarySearch(clients, p.after)
	if i < len(clients) && clients[i] == p.after {
		i++
	}
	for ; i < len(clients); i++ {
		r := st.row(clients[i])
		out.Rows = append(out.Rows, r)
		if p.full(len(out.Rows), r) {
			break
		}
	}
	if i < len(clients)-1 {
		out.NextPageToken = pages.Token(pages.Clients, ws, clients[i])
	}
	return out, nil
}

// ListTools lists a page of the tools of a workspace's clients, for a
// workspace the caller may see, under their presented names, sorted by
// presented name.
func (s *Service) ListTools(ctx context.Context, req *registryv1.ListToolsRequest) (*registryv1.ListToolsResponse, error) {
	ws := req.GetWorkspace()
	_, sees, err := s.st.caller(ctx)
	if err != nil {
		return nil, err
	}
	st := s.st
	st.mu.Lock()
	members := st.members[ws]
	if len(members) == 0 || !sees.Sees(ws) {
		st.mu.Unlock()
		return nil, unknownWorkspace(ws)
	}
	p, err := pageOf(pages.Tools, ws, req.GetPageSize(), req.GetPageToken())
	if err != nil {
		st.mu.Unlock()
		return nil, err
	}
	var tools []*registryv1.PresentedTool
	for c := range members {
		a := st.adverts[c]
		if a == nil {
			continue
		}
		present := st.present[c] != nil
		for i, t := range a.tools {
			if a.names[i] > p.after {
				tools = append(tools, &registryv1.PresentedTool{PresentedName: a.names[i], Client: c, Tool: t, Present: present})
			}
		}
	}
	st.mu.Unlock()
	// Sorting needs nothing the lock guards; it runs after the lock is
	// released so a large workspace does not hold up advertisers.
	slices.SortFunc(tools, func(a, b *registryv1.PresentedTool) int {
		return strings.Compare(a.PresentedName, b.PresentedName)
	})
	out := &registryv1.ListToolsResponse{}
	for i, t := range tools {
		out.Tools = append(out.Tools, t)
		if p.full(len(out.Tools), t) {
			if i < len(tools)-1 {
				out.NextPageToken = pages.Token(pages.Tools, ws, t.PresentedName)
			}
			break
		}
	}
	return out, nil
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
	return &registryv1.GetClientResponse{Row: st.row(c), Workspaces: workspaces}, nil
}
