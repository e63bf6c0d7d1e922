package bridge

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	"github.com/switchboard-run/switchboard/kit/lib/retry"
	"github.com/switchboard-run/switchboard/kit/suite/contract"
	"github.com/switchboard-run/switchboard/kit/suite/follower"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/mcptelemetry"
	"github.com/switchboard-run/switchboard/services/bridge/internal/advertisement"
	"github.com/switchboard-run/switchboard/services/bridge/internal/plugin"
	"github.com/switchboard-run/switchboard/services/bridge/internal/results"
	"github.com/switchboard-run/switchboard/services/bridge/internal/ring"
	"github.com/switchboard-run/switchboard/services/bridge/internal/supervise"
	"github.com/switchboard-run/switchboard/services/bridge/internal/upstream"
)

// Bounds on what the bridge keeps per server for ListServers.
const (
	stderrLines  = 64
	stderrBytes  = 16 << 10
	keptFaults   = 32
	keptNotices  = 64
	noticeChars  = 1000
	peerDeadline = 10 * time.Second
)

// mount is one mounted server: its supervisor, its current session (or
// plugin backend), and what ListServers shows of it. Its runs are
// sequential; each run serves the mailbox through one Follow stream.
type mount struct {
	client  string
	cfg     *bridgev1.ServerConfig
	peers   peers
	timing  timing
	log     *slog.Logger
	session string // the follow-read session, for the registry's serving guard
	limit   int    // max_result_chars
	tools   advertisement.Options

	ctx      context.Context // ends when the mount stops
	cancel   context.CancelFunc
	follower *follower.Follower // the mailbox side of every run
	sup      *supervise.Supervisor

	stderr  *ring.Tail
	faults  *ring.Lines
	notices *ring.Lines
	settled chan struct{} // closed when the first start has an outcome
	settle  sync.Once

	advertiseMu sync.Mutex // advertisements leave in the order they are made

	mu         sync.Mutex
	sess       *upstream.Session // nil while not running
	backend    *plugin.Backend   // nil while not running
	starts     int               // runs started, for a plugin's init.restart
	info       upstream.Info
	set        *advertisement.Set
	advertised int  // tools in the last advertisement the registry took
	inFlight   int  // MCP calls running
	recovered  bool // no fault since the server last ran again or its read opened

	catalog *catalogHub // hears when the server's catalog changed

	faultCount prometheus.Counter
	sending    []mcp.Middleware // wraps each request sent an MCP server
}

func newMount(s *Service, client string, cfg *bridgev1.ServerConfig) *mount {
	maxInFlight := int(cfg.GetMaxInFlight())
	if maxInFlight <= 0 {
		maxInFlight = DefaultMaxInFlight
	}
	limit := int(cfg.GetMaxResultChars())
	if limit <= 0 {
		limit = results.DefaultMaxChars
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &mount{
		client: client, cfg: cfg, peers: s.peers, timing: s.timing,
		log:     s.log.With("client", client),
		session: "bridge-" + client + "-" + s.instance,
		limit:   limit,
		tools: advertisement.Options{Allow: cfg.GetAllowTools(), Deny: cfg.GetDenyTools(),
			MaxTools: int(cfg.GetMaxTools()), Trust: cfg.GetTrust()},
		ctx: ctx, cancel: cancel,
		stderr:  ring.NewTail(stderrLines, stderrBytes),
		faults:  ring.NewLines(keptFaults, noticeChars),
		notices: ring.NewLines(keptNotices, noticeChars),
		settled: make(chan struct{}),
		catalog: s.catalog,

		faultCount: s.metrics.faults.WithLabelValues(s.metrics.servers.Value(client), transportName(cfg)),
		sending:    []mcp.Middleware{s.metrics.mcp.Middleware(mcptelemetry.Upstream), mcptelemetry.TraceMeta},
	}
	slots := maxInFlight
	if cfg.GetPlugin() != nil {
		slots = 1 // a backend takes calls one at a time, in order (docs/design.md §7)
	}
	m.follower = follower.New(follower.Options{
		Mailbox:  m.peers.mb,
		Session:  m.session,
		As:       m.as,
		Slots:    slots,
		Deadline: callTimeout(cfg),
		// Calls already sent outlive their stream and their session (they
		// fail on their own and are answered); only a cancel or a stopping
		// mount ends them unanswered.
		RunContext: m.ctx,
		// The read is held under our session now: re-present the set, so a
		// registry that restarted, or a set changed while we were away, is
		// right.
		Opened: func(ctx context.Context, _ int32) {
			m.recover()
			m.advertise(ctx)
		},
		OnFault:   m.fault,
		OnNotice:  m.notice,
		Log:       m.log,
		Telemetry: s.cfg.Telemetry,
		// Replicas of a default mount each follow its queue; the mailbox
		// gives it one reader at a time, and the others stand by, trying
		// again often enough to take it up within seconds of its end.
		Redial:  standbyRedial,
		Standby: anotherReader,
	})
	return m
}

// standbyRedial is the backoff of a mount's follower: a replica standing by
// tries again every two seconds at most.
var standbyRedial = retry.Policy{Base: 250 * time.Millisecond, Max: 2 * time.Second, Multiplier: 2, Jitter: 0.2, Stable: 30 * time.Second}

// anotherReader says whether a refused Follow means another replica's read
// holds the queue (the mailbox's one reader per client).
func anotherReader(err error) bool {
	return contract.ReasonOf(err) == contract.ReasonSecondReader
}

// begin starts supervising the server.
func (m *mount) begin() {
	m.sup = supervise.Start(m.ctx, m.start, supervise.Options{
		CrashLimit: int(m.cfg.GetCrashLimit()),
		Backoff:    m.timing.backoff, MaxBackoff: m.timing.maxBackoff, Stable: m.timing.stable,
		OnChange: m.onChange,
	})
}

// stop ends the server and its serving. withdraw also withdraws its tools
// (unmount); a bridge shutting down leaves them advertised, as they are
// durable and a restarted bridge serves them again.
func (m *mount) stop(withdraw bool) {
	m.cancel()
	m.sup.Stop()
	if withdraw {
		m.withdraw()
	}
}

// awaitSettled waits until the first start has an outcome (running, or a
// crash), ctx ends, or the bound passes.
func (m *mount) awaitSettled(ctx context.Context) {
	t := time.NewTimer(m.timing.firstStart)
	defer t.Stop()
	select {
	case <-m.settled:
	case <-ctx.Done():
	case <-t.C:
	}
}

// as is ctx acting as this server's client identity, a tool host.
func (m *mount) as(ctx context.Context) context.Context {
	return identity.As(ctx, identity.Identity{Name: m.client, Grade: identity.Host})
}

// start is the supervisor's StartFunc: one session (or plugin backend), and
// serving it.
func (m *mount) start(ctx context.Context) (supervise.Run, error) {
	if m.cfg.GetPlugin() != nil {
		return m.startPlugin(ctx)
	}
	if m.cfg.GetOpenapi() != nil {
		return m.startOpenAPI(ctx)
	}
	octx, cancel := context.WithTimeout(ctx, m.timing.open)
	defer cancel()
	sess, err := upstream.Open(octx, m.cfg, upstream.Options{
		Client:         m.client,
		Implementation: &mcp.Implementation{Name: "switchboard-bridge", Version: "v1"},
		Stderr:         m.stderr,
		OnTools:        m.setTools,
		OnCatalog:      m.catalogChanged,
		OnResourceUpdated: func(uri string) {
			m.catalog.resourceUpdated(m.client, uri)
		},
		OnNotice:     m.notice,
		OnFault:      m.fault,
		Sending:      m.sending,
		Logger:       m.log,
		PingInterval: m.cfg.GetPingInterval().AsDuration(),
		PingTimeout:  m.cfg.GetPingTimeout().AsDuration(),
	})
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.sess, m.info = sess, sess.Info()
	m.mu.Unlock()
	m.setTools(sess.Tools())
	m.catalogChanged(upstream.Resources | upstream.Prompts) // a new session may list anew
	return m.serveRun(ctx, mcpRunner{Session: sess, m: m}), nil
}

// serveRun serves r's invocations from the mailbox until the run ends.
func (m *mount) serveRun(ctx context.Context, r runner) *run {
	runCtx, stopServing := context.WithCancel(ctx)
	rn := &run{m: m, r: r, ctx: ctx, stopServing: stopServing, followed: make(chan struct{})}
	go func() {
		defer close(rn.followed)
		_ = m.follower.Run(runCtx, r) // no error is fatal to a mount: it ends with runCtx
	}()
	return rn
}

// run is one started session (or backend) being served.
type run struct {
	m           *mount
	r           runner
	ctx         context.Context
	stopServing context.CancelFunc
	followed    chan struct{} // closed when the follower and its calls have ended
}

// Wait returns when the session dies (a crash) or the mount stops, once the
// run's serving has ended and its session is closed.
func (r *run) Wait() error {
	var err error
	select {
	case <-r.r.Done():
		err = r.r.Err()
	case <-r.ctx.Done():
		err = r.ctx.Err()
	}
	// Stop taking work (queued invocations stay on the mailbox, leased back
	// at the next Follow), let calls already sent finish or fail, and only
	// then end the session.
	r.stopServing()
	<-r.followed
	_ = r.r.Close()
	r.m.mu.Lock()
	r.m.sess, r.m.backend = nil, nil
	r.m.mu.Unlock()
	r.m.catalogChanged(upstream.Resources | upstream.Prompts) // nothing is listed until it runs again
	return err
}

// onChange records the supervisor's transitions.
func (m *mount) onChange(st supervise.Status) {
	switch st.State {
	case bridgev1.State_STATE_CRASHED:
		m.fault(fmt.Sprintf("crashed (%d in a row): %s", st.Streak, st.Fault))
	case bridgev1.State_STATE_FAILED:
		m.fault(fmt.Sprintf("failed after %d crashes in a row; its tools are withdrawn until it is mounted again: %s", st.Streak, st.Fault))
		m.withdraw()
	}
	if st.State == bridgev1.State_STATE_RUNNING {
		m.recover()
	}
	m.log.Debug("state", "state", st.State, "restarts", st.Restarts)
	if st.State != bridgev1.State_STATE_STARTING {
		m.settle.Do(func() { close(m.settled) })
	}
}

func (m *mount) notice(s string) {
	m.notices.Add(s)
	m.log.Debug("notice", "text", s)
}

func (m *mount) fault(s string) {
	m.faultCount.Inc()
	m.faults.Add(s)
	m.mu.Lock()
	m.recovered = false
	m.mu.Unlock()
	m.log.Warn("fault", "text", s)
}

// recover clears the last fault: the server runs again, or the read of
// its queue opened again. The faults keep it.
func (m *mount) recover() {
	m.mu.Lock()
	m.recovered = true
	m.mu.Unlock()
}

// setTools builds the advertisement from a listing and advertises it.
func (m *mount) setTools(listed []*mcp.Tool) { m.setSet(advertisement.Build(listed, m.tools)) }

// setSet advertises set.
func (m *mount) setSet(set *advertisement.Set) {
	m.mu.Lock()
	m.set = set
	m.mu.Unlock()
	m.advertise(m.ctx)
}

// status is the server as ListServers shows it.
func (m *mount) status() *bridgev1.ServerStatus {
	st := m.sup.Status()
	m.mu.Lock()
	if m.sess != nil {
		m.info = m.sess.Info() // a re-initialised HTTP session has a new id
	}
	info, set, advertised, inFlight, backend, recovered := m.info, m.set, m.advertised, m.inFlight, m.backend, m.recovered
	m.mu.Unlock()
	state := st.State
	if backend != nil {
		inFlight += backend.InFlight()
		if state == bridgev1.State_STATE_RUNNING && !backend.Started() {
			state = bridgev1.State_STATE_IDLE // a lazy backend before its first call
		}
	}
	out := &bridgev1.ServerStatus{
		Client:          m.client,
		Transport:       transportName(m.cfg),
		State:           state,
		ProtocolVersion: info.ProtocolVersion,
		ServerName:      info.ServerName,
		ServerVersion:   info.ServerVersion,
		ToolCount:       int32(advertised),
		Restarts:        int32(st.Restarts),
		LastFault:       lastFault(m.faults, recovered),
		StderrTail:      m.stderr.String(),
		Faults:          m.faults.All(),
		Notices:         m.notices.All(),
		InFlight:        int32(inFlight),
	}
	if set != nil {
		out.ToolsSkipped = append([]string(nil), set.Skipped...)
	}
	return out
}

// lastFault is the latest of faults, unless the mount recovered since.
func lastFault(faults *ring.Lines, recovered bool) string {
	if recovered {
		return ""
	}
	return faults.Last()
}

func transportName(cfg *bridgev1.ServerConfig) string {
	switch cfg.GetTransport().(type) {
	case *bridgev1.ServerConfig_Stdio:
		return "stdio"
	case *bridgev1.ServerConfig_Http:
		return "http"
	case *bridgev1.ServerConfig_Openapi:
		return "openapi"
	}
	return "plugin"
}

// catalogChanged tells the catalog's watchers which parts of the server's
// catalog changed.
func (m *mount) catalogChanged(k upstream.Kind) {
	if k&upstream.Resources != 0 {
		m.catalog.publish(bridgev1.CatalogChange_CATALOG_CHANGE_RESOURCES, m.client)
	}
	if k&upstream.Prompts != 0 {
		m.catalog.publish(bridgev1.CatalogChange_CATALOG_CHANGE_PROMPTS, m.client)
	}
}
