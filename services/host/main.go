package host

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/names"
	"github.com/switchboard-run/switchboard/kit/suite/process"
	"github.com/switchboard-run/switchboard/kit/suite/telemetry"
	"github.com/switchboard-run/switchboard/services/host/internal/run"
	"github.com/switchboard-run/switchboard/services/host/internal/toolsfile"
)

// Main runs a tool host: `switchboard host --tools FILE --client NAME`.
func Main(ctx context.Context, args []string, stderr io.Writer) error {
	var cfg Config
	p, err := process.Start("host", &cfg, args, stderr)
	if err != nil {
		return err
	}
	defer p.Close()
	if err := cfg.check(); err != nil {
		return err
	}
	tools, err := toolsfile.Load(cfg.Tools)
	if err != nil {
		return err
	}
	roots, err := run.ParseRoots(cfg.CwdRoots)
	if err != nil {
		return err
	}
	// Everything read as the starting user is read: from here on the
	// tools this host runs must not be able to read its key.
	if err := p.Confine(cfg.Children); err != nil {
		return err
	}
	as := func(ctx context.Context) context.Context { return ctx } // TLS: the certificate speaks
	if cfg.Security.Dev {
		if as, err = devIdentity(cfg.Client); err != nil {
			return err
		}
	}
	regConn, err := p.Dial(cfg.Registry)
	if err != nil {
		return err
	}
	defer regConn.Close()
	mbConn := regConn
	if cfg.Mailbox != cfg.Registry {
		if mbConn, err = p.Dial(cfg.Mailbox); err != nil {
			return err
		}
		defer mbConn.Close()
	}
	h := New(Options{
		Tools:       tools,
		Registry:    registryv1.NewRegistryServiceClient(regConn),
		Mailbox:     mailboxv1.NewMailboxServiceClient(mbConn),
		As:          as,
		Limits:      run.Limits{Grace: 5 * time.Second, MaxOutput: cfg.MaxOutput, Roots: roots},
		Concurrency: cfg.Concurrency,
		Deadline:    cfg.Deadline,
		CacheBytes:  cfg.CacheBytes,
		Log:         p.Log,
		Telemetry:   p.Telemetry,
	})
	p.Log.Info("tool host starting", "client", cfg.Client, "tools", len(tools), "registry", cfg.Registry, "mailbox", cfg.Mailbox)
	return h.Run(ctx)
}

// devIdentity names the host in metadata, as dev mode takes identities.
func devIdentity(client string) (func(context.Context) context.Context, error) {
	if err := names.CheckClient(client); err != nil {
		return nil, fmt.Errorf("--client: %w", err)
	}
	id := identity.Identity{Name: client, Grade: identity.Host}
	return func(ctx context.Context) context.Context { return identity.As(ctx, id) }, nil
}

// Local returns a dev-mode host serving the tools file at path as client,
// with the default limits: what `switchboard dev --tools` runs in process.
// tel, when tracing, makes each run a span; nil traces nothing.
func Local(path, client string, reg registryv1.RegistryServiceClient, mb mailboxv1.MailboxServiceClient, tel *telemetry.Telemetry, log *slog.Logger) (*Host, error) {
	tools, err := toolsfile.Load(path)
	if err != nil {
		return nil, err
	}
	as, err := devIdentity(client)
	if err != nil {
		return nil, err
	}
	roots, err := run.ParseRoots("") // the working directory
	if err != nil {
		return nil, err
	}
	return New(Options{Tools: tools, Registry: reg, Mailbox: mb, As: as, Log: log, Concurrency: DefaultConcurrency, Telemetry: tel,
		Limits: run.Limits{Grace: 5 * time.Second, MaxOutput: DefaultMaxOutput, Roots: roots}}), nil
}
