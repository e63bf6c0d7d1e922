// Package dev wires the whole suite into one process on loopback (`switchboard
// dev`, what `make run` runs): a NATS server with JetStream storage under
// --data (or the cluster --nats names), the registry, mailbox and bridge on
// one gRPC server, the HTTP gateway beside it, and optionally a local tool
// host and MCP servers mounted at start. The services are the same code as
// the split deployment; they reach each other through gRPC clients dialed
// to the process's own listener, exactly as they would across machines.
package dev

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/lib/listen"
	"github.com/switchboard-run/switchboard/kit/suite/certs"
	"github.com/switchboard-run/switchboard/kit/suite/grpcserver"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/natsconn"
	"github.com/switchboard-run/switchboard/kit/suite/natsserver"
	"github.com/switchboard-run/switchboard/kit/suite/process"
	"github.com/switchboard-run/switchboard/kit/suite/telemetry"
	"github.com/switchboard-run/switchboard/services/bridge"
	"github.com/switchboard-run/switchboard/services/gateway"
	"github.com/switchboard-run/switchboard/services/host"
	"github.com/switchboard-run/switchboard/services/mailbox"
	"github.com/switchboard-run/switchboard/services/registry"
)

// Options are `switchboard dev`'s flags.
type Options struct {
	GRPC, HTTP string
	// DataDir holds the embedded NATS server's storage (DataDir/nats); a
	// registry.db an earlier version left there is imported once.
	DataDir     string
	MCPConfig   string
	ToolsFile   string
	ToolsClient string
	// Groups is a tool groups file the registry sets at start.
	Groups string
	// MaxTokenTTL is the longest a token may work (the registry's
	// --max-token-ttl; zero: registry.DefaultMaxTokenTTL).
	MaxTokenTTL time.Duration
	Mailbox     mailbox.Bounds
	// NATS, when it names servers, holds the state instead of the embedded
	// server.
	NATS natsconn.Config
	// NATSCerts is a directory `switchboard certs suite` wrote: with NATS,
	// the registry, the mailbox and the bridge each connect as themselves,
	// with the leaf of DIR/<service> (docs/security.md, "NATS").
	NATSCerts string
	Log       *slog.Logger
	// Ready, when set, is called once everything listens, with the
	// addresses actually bound (tests listen on port 0).
	Ready func(grpcAddr, httpAddr string)
	// Console receives the console's link, which carries the run's secret
	// (the command's stderr; nil: discarded).
	Console io.Writer
	// Secret is the run's secret (docs/security.md, "Dev mode"); empty: one
	// is drawn, as switchboard dev does. Either way it is written to
	// DataDir/dev-secret for the run.
	Secret string
	// Observe are --metrics-addr and --debug-addr; the gateway serves the
	// metrics at /metrics in any case.
	Observe process.Observe
	// Telemetry is the one registry and tracer every service shares (nil:
	// what the OTEL_* environment asks for).
	Telemetry *telemetry.Telemetry
	// OAuth makes the gateway's MCP endpoint an OAuth resource server
	// (--oauth-*; the resource defaults to http://<the HTTP address>), and
	// Limits are the per-caller call limits (--call-*): the gateway's flags.
	OAuth  gateway.OAuthFlags
	Limits gateway.LimitFlags
}

// Run serves the suite until ctx ends.
func Run(ctx context.Context, o Options) error {
	if o.Console == nil {
		o.Console = io.Discard
	}
	if o.MaxTokenTTL == 0 {
		o.MaxTokenTTL = registry.DefaultMaxTokenTTL
	}
	// Dev mode takes a caller's word for who it is, but only from a caller
	// that can read this run's secret (docs/security.md, "Dev mode").
	secret, secretFile, err := process.WriteDevSecret(o.DataDir, o.Secret)
	if err != nil {
		return err
	}
	defer os.Remove(secretFile)
	sec := process.Security{Dev: true, DevSecret: secret}
	log := o.Log
	tel := o.Telemetry
	if tel == nil {
		var err error
		if tel, err = telemetry.New(ctx, "switchboard"); err != nil {
			return err
		}
		defer tel.Shutdown(context.WithoutCancel(ctx))
		o.Telemetry = tel
	}
	observing, err := o.Observe.Open(log, tel, true, nil)
	if err != nil {
		return err
	}
	defer observing.Close()
	grpcLis, err := listen.TCP(o.GRPC, true)
	if err != nil {
		return err
	}
	// The servers close their listeners when they stop; these cover every
	// return before they start (a second Close is harmless).
	defer grpcLis.Close()
	httpLis, err := listen.TCP(o.HTTP, true)
	if err != nil {
		return err
	}
	defer httpLis.Close()
	nc, where, stopNATS, err := connectNATS(o, log)
	if err != nil {
		return err
	}
	defer stopNATS()
	defer nc.close()
	regCfg := registry.Config{WatchBuffer: registry.DefaultWatchBuffer, MaxTools: registry.DefaultMaxTools, MaxTokenTTL: o.MaxTokenTTL,
		NATS: o.NATS, Flags: process.Flags{Security: sec}, Telemetry: tel, Groups: o.Groups}
	if old := filepath.Join(o.DataDir, "registry.db"); o.DataDir != "" && exists(old) {
		regCfg.Import = old // an earlier version's store: copied in once, then renamed
	}
	reg, err := registry.New(ctx, regCfg, nc.registry, log.With("service", "registry"))
	if err != nil {
		return err
	}
	defer reg.Close()
	// The services reach each other in process: the same interceptors and
	// identity guard as a network call, without HTTP/2 or marshalling
	// (docs/architecture.md, "One process").
	srv := grpcserver.New(grpcserver.Options{Logger: log, Telemetry: tel, Guard: identity.Guard{Auth: sec.Authenticator(),
		Policy: identity.Merge(registry.Policy, mailbox.Policy, bridge.Policy)}})
	conn := srv.InProcess(grpc.PerRPCCredentials(identity.DevSecret(secret)))
	regClient := registryv1.NewRegistryServiceClient(conn)
	mbClient := mailboxv1.NewMailboxServiceClient(conn)

	mb, err := mailbox.New(ctx, mailbox.Config{Bounds: o.Mailbox, NATS: o.NATS, Telemetry: tel}, nc.mailbox, regClient, sec.Self("mailbox"), log.With("service", "mailbox"))
	if err != nil {
		return err
	}
	br, err := bridge.New(ctx, bridge.Config{NATS: o.NATS, Flags: process.Flags{Security: sec}, Telemetry: tel}, nc.bridge, regClient, mbClient, log.With("service", "bridge"))
	if err != nil {
		return err
	}
	defer br.Close()
	if o.OAuth.Issuers != "" && o.OAuth.Resource == "" {
		o.OAuth.Resource = "http://" + httpLis.Addr().String()
	}
	gw, err := gateway.New(gateway.Config{Listen: httpLis.Addr().String(), Flags: process.Flags{Security: sec}, MCPSessionTimeout: gateway.DefaultMCPSessionTimeout,
		OAuth: o.OAuth, Limits: o.Limits, Telemetry: tel}, gateway.Backends{Registry: conn, Mailbox: conn, Bridge: conn,
		Self: sec.Self("gateway")}, log.With("service", "gateway"))
	if err != nil {
		return err
	}
	reg.Register(srv)
	mb.Register(srv)
	br.Register(srv)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g, ctx := errgroup.WithContext(ctx)
	mb.Start(ctx)
	g.Go(func() error { return srv.Serve(ctx, grpcLis) })
	g.Go(func() error { return gw.Serve(ctx, httpLis) })
	log.Info("switchboard dev is up",
		"grpc", grpcLis.Addr().String(), "http", "http://"+httpLis.Addr().String(), "nats", where,
		"secret", secretFile,
		"try", fmt.Sprintf(`grpcurl -plaintext -H 'switchboard-identity: me' -H "switchboard-dev-secret: $(cat %s)" %s list`, secretFile, grpcLis.Addr()))
	// The one place the secret itself is shown: a link that signs the
	// console in, as notebook servers print theirs.
	fmt.Fprintf(o.Console, "\nThe console, for this run only (the link carries its secret; keep it to yourself):\n\n    http://%s/console/#dev-secret=%s\n\n", httpLis.Addr(), secret)
	// The extras advertise and follow: they start once the mailbox's view
	// of the registry holds its first snapshot, so the invoke check sees
	// their tools from the view.
	select {
	case <-mb.Synced():
	case <-ctx.Done(): // stopped, or a server failed: g.Wait says which
		return g.Wait()
	}
	if err := startExtras(ctx, g, o, br, regClient, mbClient, log); err != nil {
		cancel()
		return errors.Join(err, g.Wait())
	}
	if o.Ready != nil {
		o.Ready(grpcLis.Addr().String(), httpLis.Addr().String())
	}
	return g.Wait()
}

// conns are the NATS connections of the services that keep state: one
// in-process connection for all three to the embedded server; with --nats,
// one each, as itself.
type conns struct{ registry, mailbox, bridge *nats.Conn }

func (c conns) close() {
	for _, nc := range []*nats.Conn{c.registry, c.mailbox, c.bridge} {
		if nc != nil {
			nc.Close()
		}
	}
}

// connectNATS starts the embedded NATS server under DataDir (unless o.NATS
// names servers) and connects to it in process. stop shuts the embedded
// server down once the services are done with it.
func connectNATS(o Options, log *slog.Logger) (nc conns, where string, stop func(), err error) {
	if o.NATS.URLs != "" {
		nc, err = connectEach(o, log)
		return nc, o.NATS.URLs, func() {}, err
	}
	if o.NATSCerts != "" {
		return conns{}, "", nil, errors.New("--nats-certs names the certificates to present to --nats, which names no servers: the embedded NATS takes no certificate")
	}
	dir := filepath.Join(o.DataDir, "nats")
	ns, err := natsserver.Start(natsserver.Options{Dir: dir, Log: log.With("service", "nats")})
	if err != nil {
		return conns{}, "", nil, err
	}
	one, err := o.NATS.Connect("switchboard dev", log, ns.InProcess())
	if err != nil {
		ns.Shutdown()
		return conns{}, "", nil, err
	}
	return conns{one, one, one}, "embedded, storage in " + dir, ns.Shutdown, nil
}

// connectEach connects the registry, the mailbox and the bridge to the
// servers of --nats, each on its own connection: with --nats-certs, each
// presents its own leaf, and the suite's NATS gives each its own subjects
// only (docs/security.md, "NATS").
func connectEach(o Options, log *slog.Logger) (conns, error) {
	if o.NATS.Cert != "" {
		return conns{}, errors.New("switchboard dev connects the registry, the mailbox and the bridge to NATS each as itself: name the directory `switchboard certs suite` wrote with --nats-certs, not one certificate with --nats-tls-cert")
	}
	var c conns
	for _, s := range []struct {
		name string
		nc   **nats.Conn
	}{{"registry", &c.registry}, {"mailbox", &c.mailbox}, {"bridge", &c.bridge}} {
		cfg := o.NATS
		if o.NATSCerts != "" {
			f := certs.DirFiles(filepath.Join(o.NATSCerts, s.name))
			cfg.CA, cfg.Cert, cfg.Key = f.CA, f.Cert, f.Key
		}
		var err error
		if *s.nc, err = cfg.Connect("switchboard dev "+s.name, log); err != nil {
			c.close()
			return conns{}, err
		}
	}
	return c, nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// startExtras mounts the MCP servers of --mcp-config and runs the tool host
// of --tools.
func startExtras(ctx context.Context, g *errgroup.Group, o Options, br *bridge.Service,
	reg registryv1.RegistryServiceClient, mb mailboxv1.MailboxServiceClient, log *slog.Logger) error {
	if o.MCPConfig != "" {
		if err := br.MountConfig(ctx, o.MCPConfig); err != nil {
			return fmt.Errorf("--mcp-config %s: %w", o.MCPConfig, err)
		}
		log.Info("mounted the MCP servers of the config", "file", o.MCPConfig)
	}
	if o.ToolsFile == "" {
		return nil
	}
	h, err := host.Local(o.ToolsFile, o.ToolsClient, reg, mb, o.Telemetry, log.With("service", "host"))
	if err != nil {
		return fmt.Errorf("--tools %s: %w", o.ToolsFile, err)
	}
	g.Go(func() error { return h.Run(ctx) })
	log.Info("serving the local tools", "file", o.ToolsFile, "client", o.ToolsClient)
	return nil
}
