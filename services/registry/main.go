package registry

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/switchboard-run/switchboard/kit/suite/process"
)

// Main runs the registry alone: it parses args (with SWITCHBOARD_* env
// fallbacks), connects to NATS, serves until ctx ends, then shuts down.
// Both cmd/registry and `switchboard registry` call it.
func Main(ctx context.Context, args []string, stderr io.Writer) (err error) {
	var cfg Config
	p, err := process.Start("registry", &cfg, args, stderr)
	if err != nil {
		return err
	}
	defer p.Close()
	if err := errors.Join(cfg.check(), cfg.checkAlone()); err != nil {
		return err
	}
	srv, err := p.GRPCServer(Policy)
	if err != nil {
		return err
	}
	lis, err := p.Listen(cfg.Listen)
	if err != nil {
		return err
	}
	defer lis.Close()
	nc, err := p.NATS(cfg.NATS)
	if err != nil {
		return err
	}
	defer nc.Close()
	cfg.Telemetry = p.Telemetry
	svc, err := New(ctx, cfg, nc, p.Log)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := svc.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("closing the registry: %w", cerr))
		}
	}()
	svc.Register(srv)
	p.Log.Info("registry listening", "addr", lis.Addr().String(), "dev", cfg.Security.Dev, "nats", nc.ConnectedUrlRedacted())
	return srv.Serve(ctx, lis)
}
