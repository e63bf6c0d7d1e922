package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/config"
	"github.com/switchboard-run/switchboard/kit/grpcclient"
	"github.com/switchboard-run/switchboard/kit/identity"
	"github.com/switchboard-run/switchboard/kit/logging"
	"github.com/switchboard-run/switchboard/kit/names"
	"github.com/switchboard-run/switchboard/services/host/internal/run"
	"github.com/switchboard-run/switchboard/services/host/internal/toolsfile"
)

// Main runs a tool host: `switchboard host --tools FILE --client NAME`.
func Main(ctx context.Context, args []string, stderr io.Writer) error {
	fs := config.NewFlagSet("host", stderr)
	var sec config.Security
	sec.Register(fs)
	toolsPath := fs.String("tools", "", "the tools file: a JSON array of {name, description, input_schema, command, cwd?, subject_cwd?}")
	client := fs.String("client", "", "the client name to host as (dev mode; with TLS the certificate's CN is the identity)")
	regAddr := fs.String("registry", "127.0.0.1:7737", "the registry's gRPC address")
	mbAddr := fs.String("mailbox", "127.0.0.1:7737", "the mailbox's gRPC address")
	deadline := fs.Duration("deadline", 2*time.Minute, "how long one tool run may take before SIGTERM, then SIGKILL (exit code 124)")
	concurrency := fs.Int("concurrency", 4, "tool runs at once")
	maxOutput := fs.Int("max-output", 1<<20, "bytes of stdout and of stderr kept from one run; the rest is counted and dropped")
	level := fs.String("log-level", "info", "debug, info, warn or error")
	format := fs.String("log-format", "text", "text or json")
	if err := config.ParseOS(fs, args); err != nil {
		return err
	}
	log, err := logging.New(stderr, *level, *format)
	if err != nil {
		return err
	}
	if err := sec.Check(); err != nil {
		return err
	}
	if *toolsPath == "" {
		return errors.New("--tools is required: the tools file to serve")
	}
	tools, err := toolsfile.Load(*toolsPath)
	if err != nil {
		return err
	}
	as := func(ctx context.Context) context.Context { return ctx } // TLS: the certificate speaks
	if sec.Dev {
		if err := names.CheckClient(*client); err != nil {
			return fmt.Errorf("--client: %w", err)
		}
		id := identity.Identity{Name: *client, Grade: identity.Host}
		as = func(ctx context.Context) context.Context { return identity.As(ctx, id) }
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
