package bridge

import (
	"context"
	"net/http"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
	"github.com/switchboard-run/switchboard/kit/suite/follower"
	"github.com/switchboard-run/switchboard/services/bridge/internal/advertisement"
	"github.com/switchboard-run/switchboard/services/bridge/internal/openapi"
	"github.com/switchboard-run/switchboard/services/bridge/internal/supervise"
	"github.com/switchboard-run/switchboard/services/bridge/internal/upstream"
)

// MaxInlineSpecBytes bounds an OpenAPI document sent with a mount; a
// larger one is mounted by its URL.
const MaxInlineSpecBytes = openapi.MaxInlineSpecBytes

// startOpenAPI is the supervisor's StartFunc for an HTTP API described by
// an OpenAPI document (docs/connectors.md): the document is read (fetched
// again at each start when it is at a URL), its operations advertised, and
// each invocation served as the operation's request. A document that
// cannot be read or mounted is a failed start, counted as a crash.
func (m *mount) startOpenAPI(ctx context.Context) (supervise.Run, error) {
	octx, cancel := context.WithTimeout(ctx, m.timing.open)
	defer cancel()
	api, err := openapi.Load(octx, m.cfg.GetOpenapi(), nil)
	if err != nil {
		return nil, err
	}
	set := advertisement.FromManifest(api.Tools, m.tools)
	set.Skipped = append(api.Skipped, set.Skipped...)
	m.mu.Lock()
	m.info = upstream.Info{ProtocolVersion: api.OpenAPI, ServerName: api.Title, ServerVersion: api.Version}
	m.mu.Unlock()
	m.setSet(set)
	return m.serveRun(ctx, &openapiRunner{api: api, client: api.Client(), m: m, done: make(chan struct{})}), nil
}

// openapiRunner calls an API: up to max_in_flight requests at once (the
// follower's slots). It has no process or session to lose, so it ends
// only when closed.
type openapiRunner struct {
	api    *openapi.API
	client *http.Client
	m      *mount
	done   chan struct{}
}

func (r *openapiRunner) Run(ctx context.Context, inv *mailboxv1.Invocation) *mailboxv1.Capture {
	m, tool := r.m, inv.GetTool()
	defer m.busy()()
	m.mu.Lock()
	set := m.set
	m.mu.Unlock()
	if set == nil || !set.Has(tool) {
		return capture.Failed(capture.ExitNotFound, "the API mounted as %q does not advertise a tool %q, so it was not called", m.client, tool)
	}
	if inv.Cwd != nil {
		return capture.Failed(capture.ExitError, "tool %q does not take a cwd: an HTTP API is not told a working directory, so it was not called", tool)
	}
	c := r.api.Call(ctx, r.client, tool, inv.GetInput(), m.limit)
	if o, ok := follower.Overran(ctx); ok {
		return capture.Failed(capture.ExitTimeout, "the request of tool %q of %q was stopped: %v", tool, m.client, o)
	}
	if ctx.Err() != nil {
		return nil // cancelled by its poster, or the mount is stopping
	}
	return c
}

func (r *openapiRunner) Done() <-chan struct{} { return r.done }
func (r *openapiRunner) Err() error            { return nil }

func (r *openapiRunner) Close() error {
	r.client.CloseIdleConnections()
	return nil
}

// checkDocument loads an API mount's document (a no-op for other kinds),
// so a document that cannot be mounted is refused at Mount with its
// sentence rather than stored to crash on every replica.
func (s *Service) checkDocument(ctx context.Context, cfg *bridgev1.ServerConfig) error {
	t := cfg.GetOpenapi()
	if t == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.timing.open)
	defer cancel()
	_, err := openapi.Load(ctx, t, nil)
	return err
}

// busy counts a call in flight for ListServers until the returned func
// is called.
func (m *mount) busy() func() {
	m.mu.Lock()
	m.inFlight++
	m.mu.Unlock()
	return func() {
		m.mu.Lock()
		m.inFlight--
		m.mu.Unlock()
	}
}

// toolsOnly names what kind of mount client is, for a refusal of a
// resource or prompt it cannot have.
func (s *Service) toolsOnly(client string) string {
	s.mu.Lock()
	e := s.entries[client]
	s.mu.Unlock()
	if e != nil && e.cfg.GetOpenapi() != nil {
		return "an HTTP API mounted from its OpenAPI document"
	}
	return "a plugin backend"
}
