package bridge

import (
	"context"
	"fmt"
	"io"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/config"
	"github.com/switchboard-run/switchboard/kit/grpcclient"
	"github.com/switchboard-run/switchboard/kit/grpcserver"
	"github.com/switchboard-run/switchboard/kit/identity"
	"github.com/switchboard-run/switchboard/kit/listen"
)

// Main runs the bridge alone until ctx ends: it parses args (flags with
// SWITCHBOARD_* env fallbacks), dials the registry and the mailbox, serves
// BridgeService, and mounts --mcp-config's servers.
func Main(ctx context.Context, args []string, stderr io.Writer) error {
	var cfg Config
	fs := config.NewFlagSet("bridge", stderr)
	cfg.Register(fs)
	log, err := cfg.Parse(fs, args, stderr)
	if err != nil {
		return err
	}
	serverTLS, clientTLS, err := cfg.Security.TLS()
	if err != nil {
		return fmt.Errorf("bridge TLS: %w", err)
	}
	regConn, err := grpcclient.Dial(cfg.Registry, clientTLS)
	if err != nil {
		return fmt.Errorf("registry: %w", err)
	}
	defer regConn.Close()
	mbConn, err := grpcclient.Dial(cfg.Mailbox, clientTLS)
	if err != nil {
		return fmt.Errorf("mailbox: %w", err)
	}
	defer mbConn.Close()

	svc, err := New(cfg, registryv1.NewRegistryServiceClient(regConn), mailboxv1.NewMailboxServiceClient(mbConn), log)
	if err != nil {
		return err
	}
	defer svc.Close()
	lis, err := listen.TCP(cfg.Listen, cfg.Security.Dev)
	if err != nil {
		return err
	}
	srv := grpcserver.New(grpcserver.Options{
		Logger: log,
		Guard:  identity.Guard{Auth: cfg.Security.Authenticator(), Policy: Policy},
		TLS:    serverTLS,
	})
	svc.Register(srv)
	if cfg.MCPConfig != "" {
		if err := svc.MountConfig(ctx, cfg.MCPConfig); err != nil {
			lis.Close()
			return err
		}
	}
	log.Info("bridge listening", "addr", lis.Addr().String(), "dev", cfg.Security.Dev,
		"registry", cfg.Registry, "mailbox", cfg.Mailbox)
	return srv.Serve(ctx, lis)
}
