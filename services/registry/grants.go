package registry

import (
	"context"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
)

// Grants: the workspaces a certificate identity may see (docs/design.md §4).
// A token carries its own; a driver certificate needs a grant record to see
// anything.

// noGrant answers an identity without a grant record.
func noGrant(name string) error {
	return status.Errorf(codes.NotFound, "no grant for %q: a driver certificate without one sees no workspace", name)
}

// SetGrant stores an identity's grant, replacing any earlier one, and
// answers once this replica's view holds it.
func (s *Service) SetGrant(ctx context.Context, req *registryv1.SetGrantRequest) (*registryv1.SetGrantResponse, error) {
	name := req.GetIdentity()
	if err := identity.CheckName(name); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "set grant: %v", err)
	}
	ws, err := identity.ParseWorkspaces(req.GetWorkspaces())
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "set grant for %q: %v", name, err)
	}
	if ws.Empty() {
		return nil, status.Errorf(codes.InvalidArgument,
			"set grant for %q: name at least one workspace (or '*' for every workspace); to take a grant away, delete it", name)
	}
	g := &registryv1.Grant{Identity: name, Workspaces: ws.List(), Updated: timestamppb.Now()}
	rev, err := s.st.records.PutGrant(ctx, g)
	if err != nil {
		return nil, storeFailed("set grant for "+strconv.Quote(name), err)
	}
	if err := s.st.waitApplied(ctx, rev); err != nil {
		return nil, err
	}
	s.st.act(ctx, "grant.set", "", name, "workspaces "+strings.Join(g.GetWorkspaces(), ","))
	return &registryv1.SetGrantResponse{Grant: g}, nil
}

// GetGrant reads one identity's grant.
func (s *Service) GetGrant(_ context.Context, req *registryv1.GetGrantRequest) (*registryv1.GetGrantResponse, error) {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	g := s.st.grants[req.GetIdentity()]
	if g == nil {
		return nil, noGrant(req.GetIdentity())
	}
	return &registryv1.GetGrantResponse{Grant: g.record}, nil
}

// ListGrants lists every grant, sorted by identity.
func (s *Service) ListGrants(context.Context, *registryv1.ListGrantsRequest) (*registryv1.ListGrantsResponse, error) {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	out := &registryv1.ListGrantsResponse{Grants: make([]*registryv1.Grant, 0, len(s.st.grants))}
	for _, name := range sortedKeys(s.st.grants) {
		out.Grants = append(out.Grants, s.st.grants[name].record)
	}
	return out, nil
}

// DeleteGrant removes an identity's grant; a driver certificate without one
// sees nothing from then on.
func (s *Service) DeleteGrant(ctx context.Context, req *registryv1.DeleteGrantRequest) (*registryv1.DeleteGrantResponse, error) {
	name := req.GetIdentity()
	if err := identity.CheckName(name); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "delete grant: %v", err)
	}
	s.st.mu.Lock()
	var old *registryv1.Grant
	if g := s.st.grants[name]; g != nil {
		old = g.record
	}
	s.st.mu.Unlock()
	rev, ok, err := s.st.records.DeleteGrant(ctx, name)
	if err != nil {
		return nil, storeFailed("delete grant for "+strconv.Quote(name), err)
	}
	if !ok {
		return nil, noGrant(name)
	}
	if err := s.st.waitApplied(ctx, rev); err != nil {
		return nil, err
	}
	if old == nil { // stored, but this view had not heard of it yet
		old = &registryv1.Grant{Identity: name}
	}
	s.st.act(ctx, "grant.delete", "", name, "")
	return &registryv1.DeleteGrantResponse{Grant: old}, nil
}
