package bridge

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/names"
	"github.com/switchboard-run/switchboard/services/bridge/serverjson"
)

// ExportServers describes the mounted servers of a workspace (or every
// one the caller sees) as server.json entries (BridgeService.ExportServers).
func (s *Service) ExportServers(ctx context.Context, req *bridgev1.ExportServersRequest) (*bridgev1.ExportServersResponse, error) {
	sees, err := s.sees(ctx)
	if err != nil {
		return nil, err
	}
	if ws := req.GetWorkspace(); ws != "" {
		if err := names.CheckWorkspace(ws); err != nil {
			return nil, status.Error(codes.InvalidArgument, err.Error())
		}
		if !sees.Sees(ws) {
			return nil, status.Errorf(codes.NotFound, "unknown workspace %q", ws)
		}
		if sees, err = identity.ParseWorkspaces([]string{ws}); err != nil {
			return nil, status.Error(codes.InvalidArgument, err.Error())
		}
	}
	entries, err := s.visibleEntries(ctx, sees)
	if err != nil {
		return nil, err
	}
	out := &bridgev1.ExportServersResponse{}
	for _, e := range entries {
		row := &bridgev1.ExportedServer{Client: e.client}
		entry, err := serverjson.Export(e.client, e.cfg, e.status())
		if err == nil {
			row.ServerJson, err = serverjson.Encode(entry)
		}
		if err != nil {
			row.Skipped = err.Error()
		}
		out.Servers = append(out.Servers, row)
	}
	return out, nil
}
