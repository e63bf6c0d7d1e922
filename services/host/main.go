package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/config"
	"github.com/switchboard-run/switchboard/kit/grpcclient"
	"github.com/switchboard-run/switchboard/kit/identity"
	"github.com/switchboard-run/switchboard/kit/names"
	"github.com/switchboard-run/switchboard/services/host/internal/run"
	"github.com/switchboard-run/switchboard/services/host/internal/toolsfile"
)

// Defaults of the host's limits.
const (
	DefaultDeadline    = 2 * time.Minute
	DefaultConcurrency = 4
	DefaultMaxOutput   = 1 << 20
)

// Main runs a tool host: `switchboard host --tools FILE --client NAME`.
func Main(ctx context.Context, args []string, stderr io.Writer) error {
	fs := config.NewFlagSet("host", stderr)
	var p config.Process
	p.Register(fs)
	toolsPath := fs.String("tools", "", "the tools file: a JSON array of {name, description, input_schema, command, cwd?, subject_cwd?}")
	client := fs.String("client", "", "the client name to host as (dev mode; with TLS the certificate's CN is the identity)")
	regAddr := fs.String("registry", "127.0.0.1:7737", "the registry's gRPC address")
	mbAddr := fs.String("mailbox", "127.0.0.1:7737", "the mailbox's gRPC address")
	deadline := fs.Duration("deadline", DefaultDeadline, "how long one tool run may take before SIGTERM, then SIGKILL (exit code 124)")
	concurrency := fs.Int("concurrency", DefaultConcurrency, "tool runs at once")
	maxOutput := fs.Int("max-output", DefaultMaxOutput, "bytes of stdout and of stderr kept from one run; the rest is counted and dropped")
	log, err := p.Parse(fs, args, stderr)
	if err != nil {
		return err
	}
	sec := &p.Security
	if *toolsPath == "" {
		return errors.New("--tools is required: the tools file to serve")
	}
	tools, err := toolsfile.Load(*toolsPath)
	if err != nil {
		return err
	}
	as := func(ctx context.Context) context.Context { return ctx } // TLS: the certificate speaks
	if sec.Dev {
		if as, err = devIdentity(*client); err != nil {
			return err
		}
	}
	if *deadline <= 0 || *concurrency <= 0 || *maxOutput <= 0 {
		return errors.New("--deadline, --concurrency and --max-output must be positive")
	}
	_, cliTLS, err := sec.TLS()
	if err != nil {
		return fmt.Errorf("host TLS: %w", err)
	}
	regConn, err := grpcclient.Dial(*regAddr, cliTLS)
	if err != nil {
		return err
	}
	defer regConn.Close()
	mbConn := regConn
	if *mbAddr != *regAddr {
		if mbConn, err = grpcclient.Dial(*mbAddr, cliTLS); err != nil {
			return err
		}
		defer mbConn.Close()
	}
	h := New(Options{
		Tools:       tools,
		Registry:    registryv1.NewRegistryServiceClient(regConn),
		Mailbox:     mailboxv1.NewMailboxServiceClient(mbConn),
		As:          as,
		Limits:      run.Limits{Deadline: *deadline, Grace: 5 * time.Second, MaxOutput: *maxOutput},
		Concurrency: *concurrency,
		Log:         log,
	})
	log.Info("tool host starting", "client", *client, "tools", len(tools), "registry", *regAddr, "mailbox", *mbAddr)
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
func Local(path, client string, reg registryv1.RegistryServiceClient, mb mailboxv1.MailboxServiceClient, log *slog.Logger) (*Host, error) {
	tools, err := toolsfile.Load(path)
	if err != nil {
		return nil, err
	}
	as, err := devIdentity(client)
	if err != nil {
		return nil, err
	}
	return New(Options{Tools: tools, Registry: reg, Mailbox: mb, As: as, Log: log, Concurrency: DefaultConcurrency,
		Limits: run.Limits{Deadline: DefaultDeadline, Grace: 5 * time.Second, MaxOutput: DefaultMaxOutput}}), nil
}
