// Package registryview is a service's local copy of the registry, fed by
// its watch stream: which client advertises which tool, which workspaces
// each client belongs to, and the grant of each certificate identity. The
// checks of docs/design.md §3 and §4 made on it — the mailbox's "the
// client advertises the tool and sits in a workspace the caller may see",
// the bridge's "the mounted server's client sits in a workspace the caller
// may see" — cost no registry RPC on the hot path.
//
// How stale it can be: a change reaches the view one watch event after the
// registry stores it (well under a millisecond on loopback). A miss is
// always re-checked with the registry (GetClient, GetGrant) before it is
// refused, so a fresh advertisement, membership or grant is never refused
// because the view lags; a withdrawn tool or membership may be accepted for
// that lag (a withdrawn tool is then refused by its host). While the
// registry is unreachable the view keeps the last state it saw. Without a
// view, a caller's grant (Sees) and whole listings (Clients, Tools) are
// read from the registry itself.
package registryview

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/grpc"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/lib/retry"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/pins"
)

type toolSet map[string]struct{}

// state is what the view holds; a snapshot builds a fresh one.
type state struct {
	tools  map[string]toolSet             // client → advertised tool names
	joined map[string]map[string]bool     // client → its workspaces
	grants map[string]identity.Workspaces // identity → its grant
	// held are the tools a pin keeps from being served: client → tool →
	// workspace → the pin.
	held map[string]map[string]map[string]*registryv1.Pin
	// recordIO are the workspaces whose audit trail records inputs and
	// outputs.
	recordIO map[string]bool
}

func newState() *state {
	return &state{tools: map[string]toolSet{}, joined: map[string]map[string]bool{}, grants: map[string]identity.Workspaces{},
		held: map[string]map[string]map[string]*registryv1.Pin{}, recordIO: map[string]bool{}}
}

// join records that client sits in ws.
func (st *state) join(client, ws string) {
	if st.joined[client] == nil {
		st.joined[client] = map[string]bool{}
	}
	st.joined[client][ws] = true
}

// pin records how a tool stands against its pin: held when it is not
// served, forgotten when it is.
func (st *state) pin(p *registryv1.Pin) {
	c, t, ws := p.GetClient(), p.GetTool(), p.GetWorkspace()
	if pins.Served(p.GetState()) {
		delete(st.held[c][t], ws)
		if len(st.held[c][t]) == 0 {
			delete(st.held[c], t)
		}
		if len(st.held[c]) == 0 {
			delete(st.held, c)
		}
		return
	}
	if st.held[c] == nil {
		st.held[c] = map[string]map[string]*registryv1.Pin{}
	}
	if st.held[c][t] == nil {
		st.held[c][t] = map[string]*registryv1.Pin{}
	}
	st.held[c][t][ws] = p
}

// heldFor is the pin that keeps client's tool from a caller who sees sees:
// nil when a workspace of client's that sees holds serves it (or sees is
// every workspace and client is in none), else the first holding it by
// workspace name.
func (st *state) heldFor(client, tool string, sees identity.Workspaces) *registryv1.Pin {
	held := st.held[client][tool]
	if len(held) == 0 {
		return nil
	}
	var first *registryv1.Pin
	for ws := range st.joined[client] {
		if !sees.Sees(ws) {
			continue
		}
		p := held[ws]
		if p == nil {
			return nil
		}
		if first == nil || p.GetWorkspace() < first.GetWorkspace() {
			first = p
		}
	}
	return first
}

// Registry is the part of the registry's client the view reads with.
type Registry interface {
	WatchTools(ctx context.Context, in *registryv1.WatchToolsRequest, opts ...grpc.CallOption) (grpc.ServerStreamingClient[registryv1.WatchToolsResponse], error)
	GetClient(ctx context.Context, in *registryv1.GetClientRequest, opts ...grpc.CallOption) (*registryv1.GetClientResponse, error)
	GetGrant(ctx context.Context, in *registryv1.GetGrantRequest, opts ...grpc.CallOption) (*registryv1.GetGrantResponse, error)
}

// View is a service's copy of the registry.
type View struct {
	reg    Registry
	caller identity.Self
	log    *slog.Logger

	mu     sync.RWMutex
	st     *state
	synced chan struct{} // closed after the first complete snapshot
	once   sync.Once
}

// New returns an empty view; Run fills it. Its calls to reg are made as
// caller, the service itself, which must see every workspace.
func New(reg Registry, caller identity.Self, log *slog.Logger) *View {
	return &View{reg: reg, caller: caller, log: log, st: newState(), synced: make(chan struct{})}
}

// Synced is closed once the view has held a complete snapshot.
func (v *View) Synced() <-chan struct{} { return v.synced }

// Run follows the registry's watch stream until ctx ends, redialing under
// the suite's default backoff; a stream that delivered a snapshot resets it.
func (v *View) Run(ctx context.Context) {
	_ = retry.Loop{Policy: retry.Default, OnRetry: func(err error, wait time.Duration) {
		v.log.Warn("registry watch ended; the workspace checks fall back to asking the registry until it is back", "err", err, "retry_in", wait.Round(time.Millisecond))
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
	snapshot := newState()
	for {
		ev, err := stream.Recv()
		if err != nil {
			return synced, err
		}
		switch c := ev.Change.(type) {
		case *registryv1.WatchToolsResponse_Synced:
			if snapshot != nil {
				v.mu.Lock()
				v.st = snapshot
				v.mu.Unlock()
				snapshot, synced = nil, true
				v.once.Do(func() { close(v.synced) })
			}
		case *registryv1.WatchToolsResponse_Resync:
			v.log.Warn("registry watch fell behind; taking a fresh snapshot", "reason", c.Resync.GetReason())
			snapshot = newState()
		default:
			if snapshot != nil {
				snapshot.apply(ev, v.log)
				continue
			}
			v.mu.Lock()
			v.st.apply(ev, v.log)
			v.mu.Unlock()
		}
	}
}

// apply applies one change of the watch stream.
func (st *state) apply(ev *registryv1.WatchToolsResponse, log *slog.Logger) {
	switch c := ev.Change.(type) {
	case *registryv1.WatchToolsResponse_Advertised:
		set := toolSet{}
		for _, t := range c.Advertised.GetTools() {
			set[t.GetName()] = struct{}{}
		}
		if len(set) == 0 {
			delete(st.tools, c.Advertised.GetClient())
		} else {
			st.tools[c.Advertised.GetClient()] = set
		}
	case *registryv1.WatchToolsResponse_Registered:
		st.join(c.Registered.GetClient(), c.Registered.GetWorkspace())
	case *registryv1.WatchToolsResponse_Unregistered:
		m := c.Unregistered
		delete(st.joined[m.GetClient()], m.GetWorkspace())
		if len(st.joined[m.GetClient()]) == 0 {
			delete(st.joined, m.GetClient())
		}
		for _, byWs := range st.held[m.GetClient()] {
			delete(byWs, m.GetWorkspace()) // an empty map reads as not held
		}
	case *registryv1.WatchToolsResponse_Pinned:
		st.pin(c.Pinned)
	case *registryv1.WatchToolsResponse_AuditPolicy:
		if c.AuditPolicy.GetPolicy().GetRecordIo() {
			st.recordIO[c.AuditPolicy.GetWorkspace()] = true
		} else {
			delete(st.recordIO, c.AuditPolicy.GetWorkspace())
		}
	case *registryv1.WatchToolsResponse_Granted:
		g := c.Granted
		if len(g.GetWorkspaces()) == 0 {
			delete(st.grants, g.GetIdentity())
			return
		}
		w, err := identity.ParseWorkspaces(g.GetWorkspaces())
		if err != nil {
			log.Warn("a grant this service cannot read grants nothing", "identity", g.GetIdentity(), "err", err)
			delete(st.grants, g.GetIdentity())
			return
		}
		st.grants[g.GetIdentity()] = w
	}
}
