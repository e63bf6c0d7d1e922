// Package mcpserve serves a workspace's tools to MCP clients: an agent
// connects to one MCP endpoint and gets every tool of every host in a
// workspace, each call routed through the mailbox with its delivery
// guarantees.
//
// A Mirror is one workspace's tool set, kept by the registry's WatchTools
// stream and re-read with ListTools (the registry owns the presented names),
// held in an MCP server of the official Go SDK: the SDK serves tools/list
// (sorted, paginated) and sends notifications/tools/list_changed when the
// set changes. tools/call is the mailbox's Call under the caller's
// identity, whose handle arrives as a header before the capture, so that a
// cancelled call can be cancelled by its handle (see call.go). The mirror
// also serves the resources, resource templates and prompts of the
// workspace's MCP servers mounted on the bridge, kept by the bridge's
// WatchCatalog (catalog.go, catalogview.go). The same Mirror serves the gateway's
// Streamable HTTP endpoint (Workspaces, HTTP) and `switchboard mcp serve` on
// stdin/stdout (Serve).
package mcpserve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/lib/workers"
	"github.com/switchboard-run/switchboard/kit/suite/mcptelemetry"
)

// DefaultCallTimeout bounds a tools/call when the client names no shorter
// timeout. MCP clients commonly give up on a request after 60 s (the
// TypeScript SDK's default); answering at 55 s leaves them the handle to
// collect the capture with instead of a bare timeout.
const DefaultCallTimeout = 55 * time.Second

// DefaultReadyWait bounds how long a new session waits for its workspace's
// first listing.
const DefaultReadyWait = 10 * time.Second

// Options are what a Mirror needs.
type Options struct {
	// Registry is the registry's client; Mailbox the connection to the
	// mailbox (tools/call reads a header of its Call while it runs, which
	// takes the connection rather than the generated client).
	Registry registryv1.RegistryServiceClient
	Mailbox  grpc.ClientConnInterface
	// Self returns the context the mirror's own calls (WatchTools,
	// ListTools, WatchCatalog and the catalog's listings) are made with:
	// the gateway's service identity, or the CLI's.
	Self func(context.Context) context.Context
	// Bridge is the bridge's client, whose mounted MCP servers' resources
	// and prompts the mirror serves (catalog.go); nil serves tools only.
	Bridge bridgev1.BridgeServiceClient
	// As returns the context a tools/call, resources/read or prompts/get is
	// made with: the identity of the caller of that one request. An error
	// refuses the request with its text.
	As func(context.Context, mcp.Request) (context.Context, error)
	// CallTimeout bounds a tools/call (0: DefaultCallTimeout).
	CallTimeout time.Duration
	// ReadyWait bounds the wait for a workspace's first listing (0:
	// DefaultReadyWait).
	ReadyWait time.Duration
	// PageSize is how many tools one tools/list page holds (0: the SDK's).
	PageSize int
	// Log receives the mirror's warnings (nil: slog.Default()).
	Log *slog.Logger
	// Metrics counts the endpoint's requests (nil: none counted).
	Metrics *mcptelemetry.Metrics

	// tasks serves the Tasks extension (tasks_http.go): the HTTP endpoint
	// does, in front of the SDK; stdio cannot (the SDK has no Tasks), so
	// its server does not offer it either.
	tasks bool
}

func (o Options) check() error {
	if o.Registry == nil || o.Mailbox == nil || o.Self == nil || o.As == nil {
		return errors.New("the MCP server needs the registry and mailbox clients and the identities to call them as")
	}
	return nil
}

func (o Options) callTimeout() time.Duration {
	if o.CallTimeout > 0 {
		return o.CallTimeout
	}
	return DefaultCallTimeout
}

func (o Options) readyWait() time.Duration {
	if o.ReadyWait > 0 {
		return o.ReadyWait
	}
	return DefaultReadyWait
}

// mailboxClient is the mailbox's connection and its generated client.
type mailboxClient struct {
	grpc.ClientConnInterface
	mailboxv1.MailboxServiceClient
}

// Mirror is one workspace's tools held in MCP servers: one for every tool
// of the workspace, and one per tool group asked for (groups.go).
type Mirror struct {
	ws      string
	opts    Options
	mailbox mailboxClient
	log     *slog.Logger
	all     *view

	ready     chan struct{} // closed after the first listing is applied
	readyOnce sync.Once
	dirty     chan struct{} // one pending re-read; a burst of changes coalesces
	catDirty  chan struct{} // the same for the catalog
	cancel    context.CancelFunc
	done      chan struct{}

	mu      sync.RWMutex
	lastErr error // why the watch or the listing last failed

	// gmu guards the groups' state; the refresher holds it while it applies
	// a listing, so a group's view is made from one listing and kept by
	// every later one.
	gmu    sync.Mutex
	list   []*registryv1.PresentedTool  // the last listing applied
	rules  map[string]*registryv1.Group // the workspace's groups, by name
	groups map[string]*view             // the groups asked for, by name, and the clients' (serverKey)
	cat    catalogSnap                  // the last catalog applied
	held   []*registryv1.Pin            // the workspace's tools a pin holds, for their refusal

	levels sessionLevels // the log levels sessions set (logs.go)
	calls  *workers.Pool // the goroutines startCall's calls run on
}

// callWorkers is how many of startCall's goroutines stay idle for the
// next call: about the calls a busy workspace runs at once.
const callWorkers = 64

// NewMirror returns the mirror of workspace ws; Start begins keeping it.
func NewMirror(ws string, opts Options) (*Mirror, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	log := opts.Log
	if log == nil {
		log = slog.Default()
	}
	m := &Mirror{ws: ws, opts: opts, mailbox: mailboxClient{opts.Mailbox, mailboxv1.NewMailboxServiceClient(opts.Mailbox)},
		log: log.With("workspace", ws), ready: make(chan struct{}),
		dirty: make(chan struct{}, 1), catDirty: make(chan struct{}, 1), done: make(chan struct{}),
		rules: map[string]*registryv1.Group{}, groups: map[string]*view{}, calls: workers.New(callWorkers)}
	m.all = m.newView("", "")
	return m, nil
}

// Server is the MCP server holding every tool of the workspace.
func (m *Mirror) Server() *mcp.Server { return m.all.server }

// Start follows the registry until ctx ends or Close is called.
func (m *Mirror) Start(ctx context.Context) {
	ctx, m.cancel = context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { m.watch(ctx) })
	wg.Go(func() { m.refresher(ctx) })
	if m.opts.Bridge != nil {
		wg.Go(func() { m.catalogWatch(ctx) })
		wg.Go(func() { m.catalogRefresher(ctx) })
	}
	go func() { wg.Wait(); close(m.done) }()
}

// Close stops following the registry and ends every MCP session of the
// mirror (an open notification stream would otherwise hold a server's
// shutdown for its whole grace).
func (m *Mirror) Close() {
	if m.cancel != nil {
		m.cancel()
		<-m.done
	}
	m.calls.Close()
	m.all.closeSessions()
	m.gmu.Lock()
	defer m.gmu.Unlock()
	for _, v := range m.groups {
		v.closeSessions()
	}
}

// WaitReady waits for the first listing, at most the configured ReadyWait.
func (m *Mirror) WaitReady(ctx context.Context) error {
	select {
	case <-m.ready:
		return nil // every request but a workspace's first
	default:
	}
	timer := time.NewTimer(m.opts.readyWait())
	defer timer.Stop()
	select {
	case <-m.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
	}
	reason := "no answer yet"
	if err := m.err(); err != nil {
		reason = err.Error()
	}
	return fmt.Errorf("the registry has not listed the tools of workspace %q within %v: %s", m.ws, m.opts.readyWait(), reason)
}

func (m *Mirror) setErr(err error) {
	m.mu.Lock()
	m.lastErr = err
	m.mu.Unlock()
}

func (m *Mirror) err() error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.lastErr
}

// sdkLog is the SDK's logger: its warnings and errors, without the lines
// it writes for every session (a stateless request is a session of its own).
func sdkLog(log *slog.Logger) *slog.Logger {
	return slog.New(atLeast{Handler: log.Handler(), min: slog.LevelWarn})
}

// atLeast drops records below min.
type atLeast struct {
	slog.Handler
	min slog.Level
}

func (a atLeast) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= a.min && a.Handler.Enabled(ctx, l)
}

func (a atLeast) WithAttrs(attrs []slog.Attr) slog.Handler {
	return atLeast{Handler: a.Handler.WithAttrs(attrs), min: a.min}
}

func (a atLeast) WithGroup(name string) slog.Handler {
	return atLeast{Handler: a.Handler.WithGroup(name), min: a.min}
}

// version is the binary's module version, for serverInfo.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "devel"
}
