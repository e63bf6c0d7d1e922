// Package upstream holds one long-lived MCP session with one server, over
// stdio (a persistent child process) or Streamable HTTP, on the official SDK:
// the SDK negotiates the protocol revision, matches responses by id, and
// sends notifications/cancelled when a call's context ends.
//
// A Session keeps the server's current tool list (every page), re-listing it
// when the server says the list changed, and likewise its resources,
// templates and prompts (catalog.go). Over HTTP, a session the server has
// forgotten (it answers 404, as after a restart) is re-initialised in place
// and its tools re-listed; a call that met the 404 is retried once, which is
// safe because the server never ran it. Any other end of the session is the
// end of the Session: Done is closed and Err says why, and the supervisor
// counts it as a crash. So is a server that stops answering pings.
package upstream

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	"github.com/switchboard-run/switchboard/services/bridge/internal/child"
	mcpstdio "github.com/switchboard-run/switchboard/services/bridge/internal/stdio"
)

// Bounds on what one session may cost.
const (
	// MaxListed bounds the tools read from a server's listing, all pages
	// together; a server listing more is cut there, with a fault.
	MaxListed = 10_000
	// listTimeout bounds a re-listing or a re-initialisation.
	listTimeout = 30 * time.Second
)

// ErrClosed is the reason of a session closed by its owner.
var ErrClosed = errors.New("the session was closed by the bridge")

// Options are what a session tells its owner, and how.
type Options struct {
	// Client is the client name the server is hosted under, for logs.
	Client string
	// Implementation is how the bridge introduces itself to the server.
	Implementation *mcp.Implementation
	// Stderr receives a stdio server's stderr; nil discards it.
	Stderr io.Writer
	// OnTools receives the tool list after every re-listing (a list change
	// or a re-initialisation), never the first one, which Open returns.
	OnTools func([]*mcp.Tool)
	// OnCatalog says which parts of the catalog (Catalog) were listed
	// again: after the server said they changed, or a re-initialisation.
	OnCatalog func(Kind)
	// OnResourceUpdated receives the URI of each listed resource the server
	// says changed (subscribe.go); nil subscribes to nothing.
	OnResourceUpdated func(uri string)
	// OnNotice receives progress and log messages from the server.
	OnNotice func(string)
	// OnFault receives trouble the session survived (a re-initialisation,
	// a failed re-listing).
	OnFault func(string)
	// Logger logs the SDK's own diagnostics; nil discards them.
	Logger *slog.Logger
	// Sending wraps every request the bridge sends the server (metrics,
	// trace context), first outermost.
	Sending []mcp.Middleware
	// PingInterval and PingTimeout are the liveness ping's (pingLoop);
	// zero: DefaultPingInterval and DefaultPingTimeout.
	PingInterval, PingTimeout time.Duration
}

// Info is what the server said about itself at initialisation.
type Info struct {
	ProtocolVersion string
	ServerName      string
	ServerVersion   string
	// SessionID is the Streamable HTTP session id; empty for stdio and for
	// stateless servers.
	SessionID string
}

// Session is one server's long-lived MCP session.
type Session struct {
	cfg    *bridgev1.ServerConfig
	opts   Options
	http   bool
	client *mcp.Client
	life   context.Context // ends at Close; bounds re-listings and re-inits
	end    context.CancelFunc
	relist chan struct{}
	// catalogWake wakes catalogLoop to list pending again.
	catalogWake chan struct{}
	wg          sync.WaitGroup

	reinitMu sync.Mutex // one re-initialisation at a time

	mu      sync.Mutex
	cs      *mcp.ClientSession
	cmd     *exec.Cmd
	gen     uint64 // counts sessions; a stale one's end is not the Session's
	info    Info
	tools   []*mcp.Tool
	catalog Catalog
	pending Kind // parts of the catalog catalogLoop is to list again
	closed  bool
	// subscribed is what subscribedOn is subscribed to (subscribe.go).
	subscribedOn *mcp.ClientSession
	subscribed   map[string]bool
	// progress is where each running call's progress goes, by token.
	progress map[string]func(*mcp.ProgressNotificationParams)
	// calls counts the calls in flight; hearing is those that hear log
	// messages (logs.go).
	calls   int
	hearing map[*Hearing]bool
	done    chan struct{}
	err     error
}

// Open starts the server (stdio) or reaches it (HTTP), initialises a session
// and lists its tools. ctx bounds only the opening.
func Open(ctx context.Context, cfg *bridgev1.ServerConfig, opts Options) (*Session, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Implementation == nil {
		opts.Implementation = &mcp.Implementation{Name: "switchboard-bridge", Version: "v1"}
	}
	for _, f := range []*func(string){&opts.OnNotice, &opts.OnFault} {
		if *f == nil {
			*f = func(string) {}
		}
	}
	if opts.OnTools == nil {
		opts.OnTools = func([]*mcp.Tool) {}
	}
	if opts.OnCatalog == nil {
		opts.OnCatalog = func(Kind) {}
	}
	life, end := context.WithCancel(context.Background())
	s := &Session{cfg: cfg, opts: opts, http: cfg.GetHttp() != nil, life: life, end: end,
		relist: make(chan struct{}, 1), catalogWake: make(chan struct{}, 1), done: make(chan struct{}),
		progress: map[string]func(*mcp.ProgressNotificationParams){}, hearing: map[*Hearing]bool{}}
	s.client = mcp.NewClient(opts.Implementation, &mcp.ClientOptions{
		Logger: opts.Logger,
		// Sampling and elicitation reach a call's driver when it can be
		// asked (asks.go); no roots: a driver's are not the server's.
		Capabilities: askedCapabilities(),
		// A server's input_required result is the driver's to answer: it
		// goes back through the mailbox as it came (ClientParams).
		MultiRoundTrip:              &mcp.MultiRoundTripOptions{Disabled: true},
		ToolListChangedHandler:      s.onListChanged,
		ResourceListChangedHandler:  s.onResourcesChanged,
		PromptListChangedHandler:    s.onPromptsChanged,
		ProgressNotificationHandler: s.onProgress,
		LoggingMessageHandler:       s.onLog,
		ResourceUpdatedHandler:      s.onResourceUpdated,
	})
	s.client.AddReceivingMiddleware(s.asks)
	// First, so innermost: the stdio transport's own decoding of tools/call
	// answers comes back as a result before any other middleware sees it.
	s.client.AddSendingMiddleware(mcpstdio.ToolResults)
	for i := len(opts.Sending) - 1; i >= 0; i-- {
		s.client.AddSendingMiddleware(opts.Sending[i])
	}
	cs, cmd, l, err := s.connect(ctx)
	if err != nil {
		end()
		return nil, err
	}
	s.install(cs, cmd, l)
	s.wg.Add(3)
	go s.relistLoop()
	go s.catalogLoop()
	go s.pingLoop(cmp.Or(opts.PingInterval, DefaultPingInterval), cmp.Or(opts.PingTimeout, DefaultPingTimeout))
	return s, nil
}

// lists are what a session lists as it opens.
type lists struct {
	tools   []*mcp.Tool
	catalog Catalog
}

// connect opens and initialises one SDK session and lists its tools and
// its catalog.
func (s *Session) connect(ctx context.Context) (*mcp.ClientSession, *exec.Cmd, lists, error) {
	var l lists
	t, cmd, err := transport(s.cfg, s.opts.Stderr, s.heardLog)
	if err != nil {
		return nil, nil, l, err
	}
	cs, err := s.client.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: s.cfg.GetProtocolVersion()})
	if err != nil {
		child.KillGroup(cmd)
		return nil, nil, l, s.startError(err, cmd)
	}
	caps := cs.InitializeResult().Capabilities
	if caps == nil {
		caps = &mcp.ServerCapabilities{}
	}
	if caps.Logging != nil {
		// Ask for log messages so they reach status.notices. A server on a
		// revision that dropped logging/setLevel refuses; that is fine, as
		// each call also asks in its _meta.
		if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: LogLevel}); err != nil {
			s.opts.Logger.Debug("logging/setLevel refused", "client", s.opts.Client, "err", err)
		}
	}
	s.listCatalog(ctx, cs, Resources|Prompts, &l.catalog)
	if caps.Tools == nil {
		// A server without the tools capability serves no tools; asking
		// would only earn a "method not found".
		return cs, cmd, l, nil
	}
	if l.tools, err = s.list(ctx, cs); err != nil {
		_ = cs.Close()
		child.KillGroup(cmd)
		return nil, nil, l, fmt.Errorf("listing tools: %w", err)
	}
	return cs, cmd, l, nil
}

// startError says why a server would not start, with its exit status when
// its process is gone.
func (s *Session) startError(err error, cmd *exec.Cmd) error {
	if cmd != nil && cmd.ProcessState != nil {
		return fmt.Errorf("initialising: %v (the process ended: %s)", err, cmd.ProcessState)
	}
	return fmt.Errorf("initialising: %w", err)
}

// install makes cs the current session and watches for its end.
func (s *Session) install(cs *mcp.ClientSession, cmd *exec.Cmd, l lists) {
	ir := cs.InitializeResult()
	info := Info{ProtocolVersion: ir.ProtocolVersion, SessionID: cs.ID()}
	if ir.ServerInfo != nil {
		info.ServerName, info.ServerVersion = ir.ServerInfo.Name, ir.ServerInfo.Version
	}
	s.mu.Lock()
	s.cs, s.cmd, s.info, s.tools, s.catalog = cs, cmd, info, l.tools, l.catalog
	s.gen++
	gen := s.gen
	s.mu.Unlock()
	s.wg.Add(1)
	go s.watch(cs, cmd, gen)
	s.subscribeListed(cs, l.catalog.Resources)
}

// list reads every page of the server's tools.
func (s *Session) list(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Tool, error) {
	var tools []*mcp.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		if len(tools) == MaxListed {
			s.opts.OnFault(fmt.Sprintf("the server lists more than %d tools; the rest were not read", MaxListed))
			break
		}
		tools = append(tools, t)
	}
	return tools, nil
}

// watch waits for cs to end and decides what its end means.
func (s *Session) watch(cs *mcp.ClientSession, cmd *exec.Cmd, gen uint64) {
	defer s.wg.Done()
	err := cs.Wait()
	s.mu.Lock()
	stale := s.closed || gen != s.gen
	s.mu.Unlock()
	if stale {
		return
	}
	switch {
	case s.http && errors.Is(err, mcp.ErrSessionMissing):
		if err = s.reinit(gen); err == nil {
			return // a new session took over
		}
	case cmd != nil:
		_ = cs.Close() // reaps the process, so its exit status is known
		child.KillGroup(cmd)
		err = fmt.Errorf("the server process exited (%s)", exitState(cmd))
	default:
		err = fmt.Errorf("the MCP session with %s ended: %v", s.cfg.GetHttp().GetUrl(), err)
	}
	s.finish(err)
}

func exitState(cmd *exec.Cmd) string {
	if cmd.ProcessState == nil {
		return "its output closed"
	}
	return cmd.ProcessState.String()
}

// finish ends the Session with err, once.
func (s *Session) finish(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.done:
	default:
		s.err = err
		close(s.done)
	}
}

// reinit replaces an HTTP session the server has forgotten with a new one,
// unless that was done already since session gen.
func (s *Session) reinit(gen uint64) error {
	s.reinitMu.Lock()
	defer s.reinitMu.Unlock()
	s.mu.Lock()
	old, current, closed := s.cs, s.gen, s.closed
	oldID := s.info.SessionID
	s.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if current != gen {
		return nil // another caller re-initialised it already
	}
	ctx, cancel := context.WithTimeout(s.life, listTimeout)
	defer cancel()
	cs, _, l, err := s.connect(ctx)
	if err != nil {
		return fmt.Errorf("the HTTP session %s expired and re-initialising failed: %w", oldID, err)
	}
	s.install(cs, nil, l)
	_ = old.Close() // no DELETE: the server has forgotten it already
	s.opts.OnFault(fmt.Sprintf("the HTTP session %s expired (the server answered 404); re-initialised as %q with %d tools",
		oldID, cs.ID(), len(l.tools)))
	s.opts.OnTools(l.tools)
	s.opts.OnCatalog(Resources | Prompts)
	return nil
}
