package bridge

import (
	"cmp"
	"context"
	"time"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/lib/rawjson"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
	"github.com/switchboard-run/switchboard/kit/suite/contract"
	"github.com/switchboard-run/switchboard/kit/suite/follower"
	"github.com/switchboard-run/switchboard/services/bridge/internal/advertisement"
	"github.com/switchboard-run/switchboard/services/bridge/internal/mcpconfig"
	"github.com/switchboard-run/switchboard/services/bridge/internal/plugin"
	"github.com/switchboard-run/switchboard/services/bridge/internal/supervise"
	"github.com/switchboard-run/switchboard/services/bridge/internal/upstream"
)

// runner is one started server as a run serves it: an MCP session, or a
// plugin backend (docs/design.md §7). Both are supervised, followed and completed
// the same way (kit/suite/follower); they differ in how a call reaches them.
type runner interface {
	// Run serves one invocation: the follower's runner.
	follower.Runner
	// Done is closed when the server has ended; Err then says why.
	Done() <-chan struct{}
	Err() error
	// Close ends the server.
	Close() error
}

// mcpRunner calls an MCP session: up to max_in_flight calls at once (the
// follower's slots).
type mcpRunner struct {
	*upstream.Session
	m *mount
}

func (r mcpRunner) Run(ctx context.Context, inv *mailboxv1.Invocation) *mailboxv1.Capture {
	m := r.m
	defer m.busy()()
	if c, answer := m.serve(ctx, r.Session, inv); answer {
		return c
	}
	return nil
}

// pluginRunner calls a plugin backend, which takes one call at a time in
// order: the follower gives it one slot, so calls reach it in the order the
// stream delivered them.
type pluginRunner struct {
	*plugin.Backend
	m *mount
}

func (r pluginRunner) Run(ctx context.Context, inv *mailboxv1.Invocation) *mailboxv1.Capture {
	if c := r.m.refusePlugin(inv); c != nil {
		return c
	}
	hear := plugin.Hearing{Progress: follower.Progress(ctx)}
	if contract.Answers(inv.GetMcpParams()) {
		hear.Ask = follower.Asker(ctx, inv.GetDelivery())
	}
	if c, answer := r.Submit(ctx, inv.GetTool(), inv.GetInput(), hear).Wait(); answer {
		return c
	}
	if o, ok := follower.Overran(ctx); ok {
		return capture.Failed(capture.ExitTimeout, "plugin tool %q of %q was stopped and the backend sent its cancel: %v", inv.GetTool(), r.m.client, o)
	}
	return nil
}

// callTimeout is a server's per-call deadline: a plugin manifest's, the
// config's, or the follower's default (docs/design.md §5).
func callTimeout(cfg *bridgev1.ServerConfig) time.Duration {
	d := cfg.GetCallTimeout()
	if p := cfg.GetPlugin().GetCallTimeout(); p != nil {
		d = p // the manifest's, as the backend's author set it
	}
	return cmp.Or(d.AsDuration(), follower.DefaultDeadline)
}

// refusePlugin answers an invocation the backend must not be sent, or
// returns nil.
func (m *mount) refusePlugin(inv *mailboxv1.Invocation) *mailboxv1.Capture {
	tool := inv.GetTool()
	m.mu.Lock()
	set := m.set
	m.mu.Unlock()
	if set == nil || !set.Has(tool) {
		return capture.Failed(capture.ExitNotFound, "plugin backend %q does not advertise a tool %q, so it was not called", m.client, tool)
	}
	if inv.Cwd != nil {
		return capture.Failed(capture.ExitError, "tool %q does not take a cwd: a plugin backend is not told a working directory, so it was not called", tool)
	}
	if err := rawjson.Check("input", inv.GetInput()); err != nil {
		return capture.Failed(capture.ExitError, "tool %q was not called: the %v", tool, err)
	}
	return nil
}

// startPlugin is the supervisor's StartFunc for a plugin backend. The
// manifest's tools are advertised whether or not the process runs. The
// first backend starts at its first call unless the manifest says
// start_at_mount; a restart after a crash starts at once.
func (m *mount) startPlugin(ctx context.Context) (supervise.Run, error) {
	man := m.cfg.GetPlugin()
	m.mu.Lock()
	restart := m.starts
	m.starts++
	m.mu.Unlock()
	if restart == 0 { // the manifest's set never changes while it is mounted
		m.setSet(advertisement.FromManifest(man.GetTools(), m.tools))
	}
	b := plugin.New(plugin.Options{Client: m.client, Manifest: man, Restart: restart, Stderr: m.stderr,
		OnNotice: m.notice, OnFault: m.fault, MaxResultChars: m.limit})
	if restart > 0 || man.GetStartAtMount() {
		if err := b.Start(); err != nil {
			_ = b.Close()
			return nil, err
		}
	}
	m.mu.Lock()
	m.backend = b
	m.mu.Unlock()
	return m.serveRun(ctx, pluginRunner{Backend: b, m: m}), nil
}

// LoadPluginManifest reads a plugin manifest file (docs/design.md §7) into the
// manifest Mount takes, refusing with a sentence what the bridge could not
// run. Relative paths in it are left as written.
func LoadPluginManifest(path string) (*bridgev1.PluginManifest, error) {
	return mcpconfig.LoadManifest(path)
}
