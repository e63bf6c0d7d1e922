package mailbox

import (
	"context"
	"errors"
	"io"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/process"
)

// Main runs the mailbox alone: it parses args (flags with SWITCHBOARD_*
// env fallbacks), dials the registry, and serves until ctx ends. Both
// cmd/mailbox and `switchboard mailbox` call it.
func Main(ctx context.Context, args []string, stderr io.Writer) error {
	var cfg Config
	p, err := process.Start("mailbox", &cfg, args, stderr)
	if err != nil {
		return err
	}
	defer p.Close()
	srv, err := p.GRPCServer(Policy)
	if err != nil {
		return err
	}
	conn, err := p.Dial(cfg.Registry)
	if err != nil {
		return err
	}
	defer conn.Close()
	lis, err := p.Listen(cfg.Listen)
	if err != nil {
		return err
	}
	defer lis.Close()
	if cfg.NATS.URLs == "" {
		return errors.New("the mailbox keeps its reads, its durable invocations and its talk between replicas in NATS: name its servers with --nats nats://host:4222 (switchboard dev runs one in process)")
	}
	nc, err := p.NATS(cfg.NATS)
	if err != nil {
		return err
	}
	defer nc.Close()
	cfg.Telemetry = p.Telemetry
	svc, err := New(ctx, cfg, nc, registryv1.NewRegistryServiceClient(conn), cfg.Security.Self("mailbox"), p.Log)
	if err != nil {
		return err
	}
	svc.Register(srv)
	svc.Start(ctx)
	p.Log.Info("mailbox listening", "grpc", lis.Addr().String(), "registry", cfg.Registry, "dev", cfg.Security.Dev,
		"nats", nc.ConnectedUrlRedacted())
	return srv.Serve(ctx, lis)
}
