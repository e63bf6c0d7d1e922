// Package view is the mailbox's local copy of which client advertises which
// tool, fed by the registry's watch stream, so Invoke's one check costs no
// registry RPC on the hot path.
//
// How stale it can be: a change reaches the view one watch event after the
// registry stores it (well under a millisecond on loopback). A miss is
// always re-checked with the registry (GetClient) before it is refused, so a
// fresh advertisement is never refused because the view lags; a withdrawn
// tool may be accepted for that lag, and its host then refuses it. While the
// registry is unreachable the view keeps the last state it saw.
package view

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/identity"
	"github.com/switchboard-run/switchboard/kit/retry"
)

type toolSet map[string]struct{}

// View maps client → advertised tool names.
type View struct {
	reg    registryv1.RegistryServiceClient
	caller identity.Self
	log    *slog.Logger

	mu     sync.RWMutex
	tools  map[string]toolSet
	synced chan struct{} // closed after the first complete snapshot
	once   sync.Once
}

// New returns an empty view; Run fills it.
func New(reg registryv1.RegistryServiceClient, caller identity.Self, log *slog.Logger) *View {
	return &View{reg: reg, caller: caller, log: log, tools: map[string]toolSet{}, synced: make(chan struct{})}
}

// Synced is closed once the view has held a complete snapshot.
func (v *View) Synced() <-chan struct{} { return v.synced }

// Advertises reports whether client advertises tool right now. A miss in
// the view is confirmed with the registry; an error means the registry
// could not be asked.
func (v *View) Advertises(ctx context.Context, client, tool string) (bool, error) {
	v.mu.RLock()
	_, ok := v.tools[client][tool]
	v.mu.RUnlock()
	if ok {
		return true, nil
	}
	res, err := v.reg.GetClient(v.caller.AsSelf(ctx), &registryv1.GetClientRequest{Client: client})
	switch status.Code(err) {
	case codes.OK:
	case codes.NotFound:
		return false, nil
	default:
		return false, status.Errorf(codes.Unavailable, "cannot confirm that %q advertises %q: the registry did not answer: %v", client, tool, status.Convert(err).Message())
	}
	for _, t := range res.GetRow().GetTools() {
		if t.GetName() == tool {
			return true, nil
		}
	}
	return false, nil
}

// Run follows the registry's watch stream until ctx ends, redialing under
// the suite's default backoff; a stream that delivered a snapshot resets it.
func (v *View) Run(ctx context.Context) {
	_ = retry.Loop{Policy: retry.Default, OnRetry: func(err error, wait time.Duration) {
		v.log.Warn("registry watch ended; the invoke check falls back to asking the registry until it is back", "err", err, "retry_in", wait.Round(time.Millisecond))
	}}.Forever(ctx, v.follow)
}

// follow reads one watch stream: a snapshot (kept aside until `synced`, so
// the view never shows half of one), then live events. synced reports that
// a snapshot arrived.
func (v *View) follow(ctx context.Context) (synced bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := v.reg.WatchTools(v.caller.AsSelf(ctx), &registryv1.WatchToolsRequest{})
	if err != nil {
		return false, err
	}
	snapshot := map[string]toolSet{}
	for {
		ev, err := stream.Recv()
		if err != nil {
			return synced, err
		}
		switch c := ev.Change.(type) {
		case *registryv1.WatchToolsResponse_Advertised:
			set := toolSet{}
			for _, t := range c.Advertised.GetTools() {
				set[t.GetName()] = struct{}{}
			}
			if snapshot != nil {
				if len(set) > 0 {
					snapshot[c.Advertised.GetClient()] = set
				}
				continue
			}
			v.mu.Lock()
			if len(set) == 0 {
				delete(v.tools, c.Advertised.GetClient())
			} else {
				v.tools[c.Advertised.GetClient()] = set
			}
			v.mu.Unlock()
		case *registryv1.WatchToolsResponse_Synced:
			if snapshot != nil {
				v.mu.Lock()
				v.tools = snapshot
				v.mu.Unlock()
				snapshot, synced = nil, true
				v.once.Do(func() { close(v.synced) })
			}
		case *registryv1.WatchToolsResponse_Resync:
			v.log.Warn("registry watch fell behind; taking a fresh snapshot", "reason", c.Resync.GetReason())
			snapshot = map[string]toolSet{}
		}
	}
}
