package registry

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/names"
	"github.com/switchboard-run/switchboard/services/registry/internal/records"
	"github.com/switchboard-run/switchboard/services/registry/internal/toolset"
)

// Advertise replaces the caller's whole set. The set is checked (names,
// schemas, presented names, the bound) before the state is locked, so
// compiling schemas never holds up other callers.
func (s *Service) Advertise(ctx context.Context, req *registryv1.AdvertiseRequest) (*registryv1.AdvertiseResponse, error) {
	id, err := identity.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := names.CheckClient(id.Name); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "advertise: the set lands under the caller's identity, which must be a client name: %v", err)
	}
	// The request is the caller's; the stored set must never change under
	// the readers it is handed to.
	tools := make([]*registryv1.Tool, len(req.GetTools()))
	for i, t := range req.GetTools() {
		tools[i] = proto.CloneOf(t)
	}
	presentedNames, schemas, err := toolset.Check(id.Name, tools, s.cfg.MaxTools, s.st.schemasOf(id.Name))
	if err != nil {
		return nil, err
	}
	encoded, err := toolset.Encode(tools)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "advertise: encoding the set of %q: %v", id.Name, err)
	}
	next := &advert{tools: tools, names: presentedNames, encoded: encoded, schemas: schemas}
	wrote, err := s.st.advertise(ctx, id.Name, next, req.GetSession(), time.Now().UTC())
	if err != nil {
		return nil, err
	}
	// The first advertisement of a tool in a workspace pins it; a pin that
	// could not be stored is pinned by the host's retry.
	if err := s.st.pinAdvertised(ctx, id.Name); err != nil {
		return nil, err
	}
	return &registryv1.AdvertiseResponse{Wrote: wrote, Client: id.Name}, nil
}

// RegisterClient adds a client to a workspace, creating the workspace with
// its first member.
func (s *Service) RegisterClient(ctx context.Context, req *registryv1.RegisterClientRequest) (*registryv1.RegisterClientResponse, error) {
	m, err := membership(req.GetWorkspace(), req.GetClient())
	if err != nil {
		return nil, err
	}
	wrote, err := s.st.setMembership(ctx, m, true)
	if err != nil {
		return nil, err
	}
	if err := s.st.pinAdvertised(ctx, m.Client); err != nil {
		return nil, err
	}
	if wrote {
		s.st.act(ctx, "client.register", m.Workspace, m.Client, "")
	}
	return &registryv1.RegisterClientResponse{Wrote: wrote}, nil
}

// UnregisterClient removes a client from a workspace; the client's set is
// kept.
func (s *Service) UnregisterClient(ctx context.Context, req *registryv1.UnregisterClientRequest) (*registryv1.UnregisterClientResponse, error) {
	m, err := membership(req.GetWorkspace(), req.GetClient())
	if err != nil {
		return nil, err
	}
	wrote, err := s.st.setMembership(ctx, m, false)
	if err != nil {
		return nil, err
	}
	if wrote {
		s.st.act(ctx, "client.unregister", m.Workspace, m.Client, "")
	}
	return &registryv1.UnregisterClientResponse{Wrote: wrote}, nil
}

// membership checks the names of a membership request.
func membership(workspace, client string) (records.Member, error) {
	if err := names.CheckWorkspace(workspace); err != nil {
		return records.Member{}, status.Error(codes.InvalidArgument, err.Error())
	}
	if err := names.CheckClient(client); err != nil {
		return records.Member{}, status.Error(codes.InvalidArgument, err.Error())
	}
	return records.Member{Workspace: workspace, Client: client}, nil
}
