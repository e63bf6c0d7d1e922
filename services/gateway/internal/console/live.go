package console

import (
	"context"
	"net/http"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/services/gateway/internal/httperr"
)

// changes follows a registry watch as the caller and signals each change
// on the returned channel, coalesced: a burst of events (a snapshot, a
// host's set and its presence) is one signal, so a page re-renders once
// per burst and a slow page never makes the watch back up. The first
// signal is the end of the snapshot. The error channel gets the watch's
// end.
func (c *Console) changes(ctx context.Context, req *registryv1.WatchToolsRequest) (<-chan struct{}, <-chan error, error) {
	stream, err := c.Registry.WatchTools(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	// The first event proves the watch was admitted (an unknown workspace
	// is refused here, before the page opens its stream).
	first, err := stream.Recv()
	if err != nil {
		return nil, nil, err
	}
	dirty := make(chan struct{}, 1)
	done := make(chan error, 1)
	synced := first.GetSynced() != nil
	if synced {
		dirty <- struct{}{}
	}
	go func() {
		for {
			ev, err := stream.Recv()
			if err != nil {
				done <- err
				return
			}
			if ev.GetSynced() != nil {
				synced = true
			}
			if !synced {
				continue
			}
			select {
			case dirty <- struct{}{}:
			default: // a signal is already waiting: it covers this change too
			}
		}
	}()
	return dirty, done, nil
}

// follow serves an event stream that calls draw after every change the
// watch reports, until the caller goes away or the watch ends.
// extra, when not nil, is a further reason to draw.
func (c *Console) follow(w http.ResponseWriter, r *http.Request, req *registryv1.WatchToolsRequest, extra <-chan struct{}, draw func(context.Context, *events) error) {
	ctx, _, ok := caller(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	dirty, done, err := c.changes(ctx, req)
	if err != nil {
		refuseErr(w, err)
		return
	}
	serve(ctx, w, "live", dirty, extra, done, draw)
}

// serve answers with an event stream that calls draw after each signal on
// dirty or extra, until the caller goes away or done reports the end of
// what the stream follows (then a refusal replaces the element target).
func serve(ctx context.Context, w http.ResponseWriter, target string, dirty, extra <-chan struct{}, done <-chan error, draw func(context.Context, *events) error) {
	ev := startEvents(w)
	for {
		var err error
		select {
		case <-ctx.Done():
			return
		case err = <-done:
			_, sentence := httperr.From(err)
			ev.refusal(target, "the live view ended: "+sentence+"; reload the page to follow again")
			return
		case <-dirty:
			err = draw(ctx, ev)
		case <-extra:
			err = draw(ctx, ev)
		}
		if err != nil {
			return
		}
	}
}

// workspaceLive re-renders a workspace's clients and tools on every change
// of its members.
func (c *Console) workspaceLive(w http.ResponseWriter, r *http.Request) {
	ws := r.PathValue("workspace")
	c.follow(w, r, &registryv1.WatchToolsRequest{Workspace: &ws}, nil, func(ctx context.Context, ev *events) error {
		v, err := c.readWorkspace(ctx, ws)
		if err != nil {
			_, sentence := httperr.From(err)
			ev.refusal("clients", sentence)
			return err
		}
		if err := ev.render("clients", "clients", v); err != nil {
			return err
		}
		return ev.render("tools", "tools", v)
	})
}
