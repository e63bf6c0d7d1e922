package mcpserve

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-run/switchboard/kit/suite/grpcserver"
	"github.com/switchboard-run/switchboard/services/gateway/internal/httperr"
)

// DefaultWorkspace is the workspace of the bare /mcp route.
const DefaultWorkspace = "default"

// MaxWorkspaces bounds the workspaces one gateway mirrors at once. At the
// bound, mirrors without sessions that were not used for IdleEvict make
// room; when none can, a new workspace is refused (429).
const MaxWorkspaces = 256

// IdleEvict is how long a mirror without sessions is kept at the bound.
const IdleEvict = time.Minute

// HTTPOptions are the Streamable HTTP endpoint's settings.
type HTTPOptions struct {
	// SessionTimeout closes a session no request touched for this long (0:
	// sessions live until the client ends them).
	SessionTimeout time.Duration
	// SDKOnly serves every request through the SDK's handler, a plain
	// tools/call of the stateless era included, which the endpoint
	// otherwise answers itself (fastcall.go): for comparing the two.
	SDKOnly bool
}

// Workspaces is the gateway's MCP endpoint: one Mirror and one Streamable
// HTTP handler per workspace, started on the workspace's first request and
// shared by all its sessions, so one registry watch serves them all.
type Workspaces struct {
	opts   Options
	http   HTTPOptions
	ctx    context.Context
	cancel context.CancelFunc

	max  int           // MaxWorkspaces; tests lower it
	idle time.Duration // IdleEvict; tests lower it

	mu     sync.Mutex
	closed bool
	byName map[string]*workspace
}

type workspace struct {
	mirror *Mirror
	all    *endpoint // every tool of the workspace

	mu     sync.Mutex
	groups map[string]*endpoint // each group's and client's (serverKey), made on its first request

	used time.Time // guarded by Workspaces.mu
}

// endpoint is the Streamable HTTP handlers of one MCP server of a mirror.
type endpoint struct {
	// sessions serves the revisions with an initialize handshake and
	// sessions (2025-11-25 and earlier); stateless serves the revisions
	// without them, which the SDK serves only statelessly. One server
	// behind both: list_changed reaches a session's notification stream or
	// a stateless client's subscriptions/listen alike.
	sessions, stateless *mcp.StreamableHTTPHandler
	// adopted serves the sessions other gateway replicas began.
	adopted *adopted
	// view is the tools the server holds, for the Tasks extension, which
	// is answered in front of the SDK (tasks_http.go).
	view *view
}

// firstStatelessRevision is the first MCP revision without sessions
// (SEP-2575). A client names its revision in the Mcp-Protocol-Version header
// on every request of that era, its first included; an older client sends
// the header only after initialize, with an older revision.
const firstStatelessRevision = "2026-07-28"

// ServeHTTP picks the handler for a request by the revision it names
// (revisions are dates, so they order as strings), and for one of a
// session, by whether this replica began that session.
func (ws *endpoint) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Mcp-Protocol-Version") >= firstStatelessRevision {
		ws.stateless.ServeHTTP(rw, r)
		return
	}
	if id := r.Header.Get("Mcp-Session-Id"); id != "" {
		ws.adopted.serve(rw, r, ws.sessions, id)
		return
	}
	ws.sessions.ServeHTTP(rw, r)
}

// NewWorkspaces returns the endpoint. opts.As is ignored: over HTTP the
// identity of each tools/call is the one the gateway resolved for the HTTP
// request that carried it (see ServeHTTP).
func NewWorkspaces(opts Options, h HTTPOptions) (*Workspaces, error) {
	opts.As = callerFromHeader
	opts.tasks = true
	if err := opts.check(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Workspaces{opts: opts, http: h, ctx: ctx, cancel: cancel, max: MaxWorkspaces, idle: IdleEvict,
		byName: map[string]*workspace{}}, nil
}

// Close stops every mirror and ends every session. Later requests are
// refused.
func (w *Workspaces) Close() {
	w.mu.Lock()
	w.closed = true
	all := w.byName
	w.byName = map[string]*workspace{}
	w.mu.Unlock()
	w.cancel()
	for _, ws := range all {
		ws.mirror.Close()
	}
}

// get returns the workspace's mirror and handler, starting them on first
// use, once its tools have been listed.
func (w *Workspaces) get(ctx context.Context, name string) (*workspace, error) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil, httperr.New(http.StatusServiceUnavailable, "the gateway is shutting down")
	}
	ws := w.byName[name]
	if ws == nil {
		if len(w.byName) >= w.max {
			w.evictLocked()
		}
		if len(w.byName) >= w.max {
			w.mu.Unlock()
			return nil, httperr.New(http.StatusTooManyRequests,
				"this gateway mirrors %d workspaces already, all in use; close some MCP sessions or try again later", w.max)
		}
		var err error
		if ws, err = w.start(name); err != nil {
			w.mu.Unlock()
			return nil, err
		}
		w.byName[name] = ws
	}
	ws.used = time.Now()
	w.mu.Unlock()
	if err := ws.mirror.WaitReady(ctx); err != nil {
		if errors.Is(err, context.Canceled) {
			return nil, err
		}
		return nil, httperr.New(http.StatusServiceUnavailable, "%s", err.Error())
	}
	return ws, nil
}

func (w *Workspaces) start(name string) (*workspace, error) {
	m, err := NewMirror(name, w.opts)
	if err != nil {
		return nil, err
	}
	m.Start(w.ctx)
	return &workspace{mirror: m, all: w.endpoint(m.all), groups: map[string]*endpoint{}}, nil
}

// endpoint returns the handlers of one of a mirror's views.
func (w *Workspaces) endpoint(v *view) *endpoint {
	m, server := v.m, v.server
	get := func(*http.Request) *mcp.Server { return server }
	opts := mcp.StreamableHTTPOptions{
		SessionTimeout: w.http.SessionTimeout,
		Logger:         sdkLog(m.log),
		// The suite's message limit, as for every other route (docs/design.md §4).
		MaxRequestBodyBytes: grpcserver.MaxMessageBytes,
		// Host and Origin are checked by the gateway's hostguard, which
		// knows the names this gateway answers to; the SDK's own check
		// would refuse a proxy on loopback forwarding a configured public
		// name.
		DisableLocalhostProtection: true,
	}
	stateless := opts
	stateless.Stateless = true
	// A stateless request is its whole lifecycle: a client that gives up
	// closes it, and that must cancel the call (and so its invocation).
	stateless.PropagateRequestCancellation = true
	return &endpoint{sessions: mcp.NewStreamableHTTPHandler(get, &opts),
		stateless: mcp.NewStreamableHTTPHandler(get, &stateless), adopted: newAdopted(server, w.http.SessionTimeout), view: v}
}

// group returns the endpoint of one of ws's groups, or the refusal of a
// group the workspace does not hold.
func (w *Workspaces) group(ws *workspace, name string) (*endpoint, error) {
	v, err := ws.mirror.groupView(name)
	if err != nil {
		return nil, err
	}
	return w.endpointOf(ws, name, v), nil
}

// server returns the endpoint of one of ws's clients, or the refusal of a
// client it does not serve.
func (w *Workspaces) server(ws *workspace, client string) (*endpoint, error) {
	v, err := ws.mirror.serverView(client)
	if err != nil {
		return nil, err
	}
	return w.endpointOf(ws, serverKey(client), v), nil
}

// endpointOf is the endpoint of view v, kept under key, made on first use.
func (w *Workspaces) endpointOf(ws *workspace, key string, v *view) *endpoint {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	e := ws.groups[key]
	if e == nil {
		e = w.endpoint(v)
		ws.groups[key] = e
	}
	return e
}

// evictLocked closes mirrors nobody has a session with and nobody used
// lately. Call with w.mu held.
func (w *Workspaces) evictLocked() {
	for name, ws := range w.byName {
		if time.Since(ws.used) < w.idle {
			continue
		}
		if ws.mirror.idle() {
			delete(w.byName, name)
			go ws.mirror.Close()
		}
	}
}
