package gateway

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"google.golang.org/grpc"

	"github.com/switchboard-run/switchboard/gen"
	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/lib/hostguard"
	"github.com/switchboard-run/switchboard/kit/suite/envflag"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/mailboxcall"
	"github.com/switchboard-run/switchboard/kit/suite/mcptelemetry"
	"github.com/switchboard-run/switchboard/kit/suite/telemetry"
	"github.com/switchboard-run/switchboard/services/gateway/internal/act"
	"github.com/switchboard-run/switchboard/services/gateway/internal/bodylimit"
	"github.com/switchboard-run/switchboard/services/gateway/internal/console"

	"github.com/switchboard-run/switchboard/services/gateway/internal/httpauth"
	"github.com/switchboard-run/switchboard/services/gateway/internal/httperr"
	"github.com/switchboard-run/switchboard/services/gateway/internal/limits"
	"github.com/switchboard-run/switchboard/services/gateway/internal/oauth"
	"github.com/switchboard-run/switchboard/services/gateway/internal/rest"
	"github.com/switchboard-run/switchboard/services/gateway/mcpserve"
)

// Server timeouts. The write timeout outlasts the longest hold a route
// makes: a 30 s invocations read, a 60 s capture wait.
const (
	ReadHeaderTimeout = 10 * time.Second // slowloris
	ReadTimeout       = 60 * time.Second
	WriteTimeout      = 90 * time.Second
	IdleTimeout       = 120 * time.Second
	MaxHeaderBytes    = 64 << 10
	defaultGrace      = 35 * time.Second
)

// Backends are the gateway's peers: one shared connection per backend, and
// the identity the gateway calls as when it calls for itself (token checks).
type Backends struct {
	Registry, Mailbox, Bridge grpc.ClientConnInterface
	Self                      identity.Self
}

// Gateway serves HTTP+JSON in front of the backends.
type Gateway struct {
	cfg     Config
	log     *slog.Logger
	tls     *tls.Config
	handler http.Handler
	health  *healthCheck
	mcp     *mcpserve.Workspaces
	// patterns are the routes registered on the gateway's own mux ("/" is
	// the REST routes' mux), for the OpenAPI document's test.
	patterns []string
}

// routes is the gateway's mux, keeping the patterns it was given.
type routes struct {
	*http.ServeMux
	patterns []string
}

func (r *routes) Handle(pattern string, h http.Handler) {
	r.ServeMux.Handle(pattern, h)
	r.patterns = append(r.patterns, pattern)
}

// DefaultTokenRecheck is how soon a stream held open with a bearer token
// ends after the token is revoked or expires (docs/security.md).
const DefaultTokenRecheck = 10 * time.Second

// New builds the gateway. In production (cfg.Security not dev) it loads the
// TLS material its listener serves with; Main loads only what the gateway
// dials its backends with.
func New(cfg Config, b Backends, log *slog.Logger) (*Gateway, error) {
	if b.Registry == nil || b.Mailbox == nil || b.Bridge == nil {
		return nil, errors.New("the gateway needs a connection to each of the registry, mailbox and bridge")
	}
	if log == nil {
		log = slog.Default()
	}
	tel := cfg.Telemetry
	if tel == nil {
		tel = telemetry.NewMetrics()
	}
	g := &Gateway{cfg: cfg, log: log}
	var err error
	if g.tls, err = cfg.Security.ServerTLS(); err != nil {
		return nil, fmt.Errorf("the gateway's TLS listener: %w", err)
	}
	// Every front's Invoke and Call are made again when a replica refused
	// them unposted (it is shutting down): nothing ran, so nothing runs twice.
	mbConn := mailboxcall.RetryingNotPosted(b.Mailbox)
	generated, err := rest.New(rest.Conns{Registry: b.Registry, Mailbox: mbConn, Bridge: b.Bridge})
	if err != nil {
		return nil, err
	}
	registry := registryv1.NewRegistryServiceClient(b.Registry)
	who := httpauth.Resolver{Dev: cfg.Security.Dev, DevSecret: cfg.Security.DevSecret, Tokens: httpauth.RegistryTokens{Registry: registry, Self: b.Self},
		Recheck: cmp.Or(cfg.TokenRecheck, DefaultTokenRecheck)}
	mailbox := mailboxv1.NewMailboxServiceClient(mbConn)
	acts := act.Handler{Registry: registry, Mailbox: mailbox}
	g.health = newHealth(b.Registry, b.Mailbox, b.Bridge)
	// Every route, /healthz included, answers only the names and pages it
	// should: a probe sends a loopback Host, which every gateway answers.
	guard, err := hostguard.New(hostguard.Config{Listen: cfg.Listen, Hosts: envflag.List(cfg.HTTPHosts), Origins: envflag.List(cfg.HTTPOrigins),
		Dev: cfg.Security.Dev, What: "this gateway", HostsFlag: "--http-hosts", OriginsFlag: "--http-origins", Refuse: httperr.Write})
	if err != nil {
		return nil, err
	}
	// The mirrors watch the registry as the gateway itself; each tools/call
	// is made on behalf of the caller of its own HTTP request.
	g.mcp, err = mcpserve.NewWorkspaces(mcpserve.Options{Registry: registry, Mailbox: mbConn, Bridge: bridgev1.NewBridgeServiceClient(b.Bridge), Self: b.Self.AsSelf,
		CallTimeout: cfg.MCPCallTimeout, Log: log.With("component", "mcp"), Metrics: mcptelemetry.Register(tel)}, mcpserve.HTTPOptions{SessionTimeout: cfg.MCPSessionTimeout, SDKOnly: cfg.MCPSDKOnly})
	if err != nil {
		return nil, err
	}
	// The MCP endpoint is also an OAuth resource server when issuers are
	// named: it takes their access tokens beside every other credential,
	// and its refusals point at its metadata.
	mcpWho := who
	oauthCfg, withOAuth, err := cfg.OAuth.Config()
	if err != nil {
		return nil, err
	}
	var rs *oauth.Server
	if withOAuth {
		if rs, err = oauth.New(oauthCfg, nil); err != nil {
			return nil, err
		}
		mcpWho.OAuth = rs
	}
	// Per-caller limits on the call routes, counted once the caller is
	// known.
	limCfg, err := cfg.Limits.Config()
	if err != nil {
		return nil, err
	}
	lim := limits.New(limCfg)
	lim.Count(tel)
	mcpRoute := mcpWho.Middleware(lim.Wrap(isMCPCall, g.mcp))

	mux := &routes{ServeMux: http.NewServeMux()}
	mux.Handle("/healthz", getOnly(g.health))
	mux.Handle("/openapi.json", getOnly(document(gen.OpenAPI)))
	mux.Handle("/openapi.v2.json", getOnly(document(gen.OpenAPIv2)))
	mux.Handle("/metrics", getOnly(metricsRoute(tel, who)))
	mux.Handle("/v1/act", who.Middleware(lim.Wrap(isActCall, acts)))
	mux.Handle("/mcp", mcpRoute)
	mux.Handle("/mcp/{workspace}", mcpRoute)
	mux.Handle("/mcp/{workspace}/{group}", mcpRoute)
	mux.Handle("/mcp/{workspace}/servers/{client}", mcpRoute)
	if rs != nil {
		mux.Handle(oauth.MetadataPrefix, getOnly(rs.Metadata()))
		mux.Handle(oauth.MetadataPrefix+"/mcp", getOnly(rs.Metadata()))
		mux.Handle(oauth.MetadataPrefix+"/mcp/{workspace}", getOnly(rs.Metadata()))
		mux.Handle(oauth.MetadataPrefix+"/mcp/{workspace}/{group}", getOnly(rs.Metadata()))
		mux.Handle(oauth.MetadataPrefix+"/mcp/{workspace}/servers/{client}", getOnly(rs.Metadata()))
	}
	// The console acts through the same identity middleware, on behalf of
	// its signed-in caller; like the REST routes it names no group, so a
	// caller limited to groups is refused there too.
	ops := &console.Console{Registry: registry, Audit: registryv1.NewAuditServiceClient(b.Registry), Mailbox: mailbox,
		Bridge: bridgev1.NewBridgeServiceClient(b.Bridge), Dev: cfg.Security.Dev}
	mux.Handle(console.Prefix, ops.Handler(func(h http.Handler) http.Handler { return who.Middleware(ungrouped(h)) }))
	mux.Handle("/", who.Middleware(ungrouped(lim.Wrap(isRESTCall, rest.Unbounded(generated)))))
	g.patterns = mux.patterns
	// Telemetry outermost: every request is counted and (when tracing) is
	// a span, refusals by the guard and the body limit included, and the
	// access log line inside it carries the span's ids.
	g.handler = tel.HTTP(logRequests(log, guard.Wrap(bodylimit.Wrap(telemetry.Routed(mux.ServeMux)))))
	return g, nil
}

// Handler is every route of the gateway, for Serve or a test server.
func (g *Gateway) Handler() http.Handler { return g.handler }

// Serve serves on lis (HTTPS with client certificates in production) until
// ctx is done, then shuts down gracefully: it stops accepting, lets requests
// in flight finish within the grace, and closes what is left.
func (g *Gateway) Serve(ctx context.Context, lis net.Listener) error {
	srv := &http.Server{
		Handler:           g.handler,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		TLSConfig:         g.tls,
		ErrorLog:          slog.NewLogLogger(g.log.Handler(), slog.LevelWarn),
	}
	// MCP sessions hold notification streams open for as long as they
	// live: they are ended at the start of a shutdown, not waited for.
	srv.RegisterOnShutdown(g.mcp.Close)
	defer g.mcp.Close()
	errc := make(chan error, 1)
	go func() {
		if g.tls != nil {
			errc <- srv.ServeTLS(lis, "", "")
			return
		}
		errc <- srv.Serve(lis)
	}()
	select {
	case err := <-errc:
		return fmt.Errorf("serving HTTP on %s: %w", lis.Addr(), err)
	case <-ctx.Done():
	}
	grace := g.cfg.ShutdownGrace
	if grace <= 0 {
		grace = defaultGrace
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		g.log.Warn("graceful shutdown took too long; closing the connections left", "grace", grace)
		_ = srv.Close()
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving HTTP on %s: %w", lis.Addr(), err)
	}
	return nil
}

// getOnly answers methods other than GET and HEAD with the envelope.
func getOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			httperr.Write(w, http.StatusMethodNotAllowed, fmt.Sprintf("%s takes GET, not %s", r.URL.Path, r.Method))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// document serves one of the generated OpenAPI documents: 3.1 at
// /openapi.json, Swagger 2.0 at /openapi.v2.json.
func document(doc []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(doc)
	})
}
