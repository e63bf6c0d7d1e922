package bridge

import (
	"context"
	"sync"
	"sync/atomic"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
)

// watchBuffer is how many catalog events a watcher may fall behind by
// before it is told to list everything again (RESYNC) instead.
const watchBuffer = 256

// catalogHub hands each change of a mounted server's catalog, and of the
// mounted set, to every open WatchCatalog stream of this replica. A
// publisher never waits for a slow watcher: what does not fit its buffer
// becomes one RESYNC.
type catalogHub struct {
	mu   sync.Mutex
	subs map[*catalogSub]struct{}
}

type catalogSub struct {
	events chan *bridgev1.WatchCatalogResponse
	lost   atomic.Bool
	wake   chan struct{} // poked when an event was lost
}

func newCatalogHub() *catalogHub { return &catalogHub{subs: map[*catalogSub]struct{}{}} }

// subscribe opens a watcher; cancel closes it.
func (h *catalogHub) subscribe() (sub *catalogSub, cancel func()) {
	sub = &catalogSub{events: make(chan *bridgev1.WatchCatalogResponse, watchBuffer), wake: make(chan struct{}, 1)}
	h.mu.Lock()
	h.subs[sub] = struct{}{}
	h.mu.Unlock()
	return sub, func() {
		h.mu.Lock()
		delete(h.subs, sub)
		h.mu.Unlock()
	}
}

// publish tells every watcher that client's part changed.
func (h *catalogHub) publish(change bridgev1.CatalogChange, client string) {
	h.send(&bridgev1.WatchCatalogResponse{Change: change, Client: client})
}

// resourceUpdated tells every watcher that a resource of client changed.
func (h *catalogHub) resourceUpdated(client, uri string) {
	h.send(&bridgev1.WatchCatalogResponse{Change: bridgev1.CatalogChange_CATALOG_CHANGE_RESOURCE_UPDATED, Client: client, Uri: uri})
}

func (h *catalogHub) send(ev *bridgev1.WatchCatalogResponse) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for sub := range h.subs {
		select {
		case sub.events <- ev:
		default:
			sub.lost.Store(true)
			select {
			case sub.wake <- struct{}{}:
			default:
			}
		}
	}
}

// WatchCatalog streams the changes of this replica's mounts and of their
// servers' catalogs (BridgeService.WatchCatalog), starting with SYNCED.
// Every replica applies the same stored mounts, so any replica's stream
// tells of every mount; a server's list_changed reaches the watchers of
// the replicas that run it. A caller hears only of the servers it may see
// as each event comes (visibility.go): the watch stays open to drivers,
// since `switchboard mcp serve` watches as the person who runs it.
func (s *Service) WatchCatalog(_ *bridgev1.WatchCatalogRequest, stream bridgev1.BridgeService_WatchCatalogServer) error {
	ctx := stream.Context()
	if _, err := s.sees(ctx); err != nil {
		return err
	}
	sub, cancel := s.catalog.subscribe()
	defer cancel()
	if err := stream.Send(&bridgev1.WatchCatalogResponse{Change: bridgev1.CatalogChange_CATALOG_CHANGE_SYNCED}); err != nil {
		return err
	}
	for {
		var ev *bridgev1.WatchCatalogResponse
		select {
		case <-stream.Context().Done():
			return nil
		case <-s.life.Done():
			return nil // the replica drains: the watcher reconnects elsewhere
		case ev = <-sub.events:
		case <-sub.wake:
		}
		if ev != nil {
			shown, err := s.shows(ctx, ev)
			if err != nil {
				return err
			}
			if !shown {
				ev = nil
			}
		}
		if ev != nil {
			if err := stream.Send(ev); err != nil {
				return err
			}
		}
		if sub.lost.Swap(false) {
			if err := stream.Send(&bridgev1.WatchCatalogResponse{Change: bridgev1.CatalogChange_CATALOG_CHANGE_RESYNC}); err != nil {
				return err
			}
		}
	}
}

// shows reports whether the caller of ctx may hear of ev: of a server it
// may see. Its workspaces are read again for each event, so a grant that
// changes while the watch is open counts from the next event on. An error
// (the registry could not be asked) ends the stream; the watcher
// reconnects.
func (s *Service) shows(ctx context.Context, ev *bridgev1.WatchCatalogResponse) (bool, error) {
	if ev.GetClient() == "" {
		return true, nil
	}
	sees, err := s.sees(ctx)
	if err != nil {
		return false, err
	}
	return s.view.Visible(ctx, ev.GetClient(), sees)
}
