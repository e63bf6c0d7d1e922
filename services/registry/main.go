package registry

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/switchboard-run/switchboard/kit/config"
	"github.com/switchboard-run/switchboard/kit/grpcserver"
	"github.com/switchboard-run/switchboard/kit/identity"
	"github.com/switchboard-run/switchboard/kit/listen"
)

// Main runs the registry alone: it parses args (with SWITCHBOARD_* env
// fallbacks), serves until ctx ends, then shuts down and closes the store.
// Both cmd/registry and `switchboard registry` call it.
func Main(ctx context.Context, args []string, stderr io.Writer) (err error) {
	var cfg Config
	fs := config.NewFlagSet("registry", stderr)
	cfg.Register(fs)
	log, err := cfg.Parse(fs, args, stderr)
	if err != nil {
		return err
	}
	opts := grpcserver.Options{
		Logger: log,
		Guard:  identity.Guard{Auth: cfg.Security.Authenticator(), Policy: Policy},
	}
	if !cfg.Security.Dev {
		if opts.TLS, err = cfg.Security.Files.ServerConfig(); err != nil {
			return err
		}
	}
	svc, err := New(cfg, log)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := svc.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("closing the registry: %w", cerr))
		}
	}()
	lis, err := listen.TCP(cfg.Listen, cfg.Security.Dev)
	if err != nil {
		return err
	}
	srv := grpcserver.New(opts)
	svc.Register(srv)
	log.Info("registry listening", "addr", lis.Addr().String(), "dev", cfg.Security.Dev, "store", svc.store.Path())
	return srv.Serve(ctx, lis)
}
