package registry

import (
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/names"
	"github.com/switchboard-run/switchboard/services/registry/internal/watch"
)

// errDraining ends long-lived streams when the server shuts down.
var errDraining = status.Error(codes.Unavailable, "the registry is shutting down; reconnect to another replica or the restarted registry")

// WatchTools streams a snapshot closed by `synced`, then every change in
// the registry's order that the caller may see (docs/design.md §4): a
// workspace outside its grant is refused as unknown, and a watch of
// everything shows only the clients of the workspaces it may see. A
// watcher that lags more than --watch-buffer events is sent `resync` and a
// fresh snapshot; so is one whose grant changed. A workspace watcher gets,
// with a `registered`, the new member's set and presence; on
// `unregistered` it drops the member.
func (s *Service) WatchTools(req *registryv1.WatchToolsRequest, stream grpc.ServerStreamingServer[registryv1.WatchToolsResponse]) error {
	ws := req.GetWorkspace()
	if req.Workspace != nil {
		if err := names.CheckWorkspace(ws); err != nil {
			return status.Error(codes.InvalidArgument, err.Error())
		}
	}
	id, err := identity.Caller(stream.Context())
	if err != nil {
		return err
	}
	w, snap, err := s.st.subscribe(ws, id)
	if err != nil {
		return err
	}
	defer s.hub.Unsubscribe(w)
	if err := sendAll(stream, snap); err != nil {
		return err
	}
	ctx := stream.Context()
	for {
		select {
		case <-w.Ready():
		case <-w.Done():
			return errDraining
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		}
		events, lost := w.Take()
		if lost != "" {
			if events, err = s.st.resnapshot(w, lost); err != nil {
				return err
			}
		}
		if err := sendAll(stream, events); err != nil {
			return err
		}
	}
}

func sendAll(stream grpc.ServerStreamingServer[registryv1.WatchToolsResponse], events []*watch.Event) error {
	for _, ev := range events {
		if err := stream.Send(ev); err != nil {
			return err
		}
	}
	return nil
}
