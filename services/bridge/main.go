package bridge

import (
	"context"
	"errors"
	"fmt"
	"io"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/process"
	"github.com/switchboard-run/switchboard/services/bridge/internal/mcpconfig"
)

// Main runs the bridge alone until ctx ends: it parses args (flags with
// SWITCHBOARD_* env fallbacks), dials the registry and the mailbox, serves
// BridgeService, and mounts --mcp-config's servers.
func Main(ctx context.Context, args []string, stderr io.Writer) error {
	var cfg Config
	p, err := process.Start("bridge", &cfg, args, stderr)
	if err != nil {
		return err
	}
	defer p.Close()
	var servers map[string]*bridgev1.ServerConfig
	if cfg.MCPConfig != "" {
		if servers, err = mcpconfig.Load(cfg.MCPConfig); err != nil {
			return err
		}
	}
	// The bridge acts for its mounted clients as hosts; the backends admit
	// that only from a service certificate named "bridge".
	clientTLS, err := p.ClientTLS()
	if err != nil {
		return err
	}
	if _, err := cfg.Security.ActingSelf("bridge", clientTLS); err != nil {
		return err
	}
	lis, err := p.Listen(cfg.Listen)
	if err != nil {
		return err
	}
	defer lis.Close() // Serve closes it too; this covers the returns before
	if cfg.NATS.URLs == "" {
		return errors.New("the bridge keeps its mounts in NATS, shared by its replicas: name its servers with --nats nats://host:4222 (switchboard dev runs one in process)")
	}
	// Connected before confining: the NATS key is read once, here.
	nc, err := p.NATS(cfg.NATS)
	if err != nil {
		return err
	}
	defer nc.Close()
	// Everything read as the starting user is read: from here on the
	// servers this bridge runs must not be able to read its key.
	if err := p.Confine(cfg.Children); err != nil {
		return err
	}
	srv, err := p.GRPCServer(Policy)
	if err != nil {
		return err
	}
	regConn, err := p.Dial(cfg.Registry)
	if err != nil {
		return fmt.Errorf("registry: %w", err)
	}
	defer regConn.Close()
	mbConn, err := p.Dial(cfg.Mailbox)
	if err != nil {
		return fmt.Errorf("mailbox: %w", err)
	}
	defer mbConn.Close()

	cfg.Telemetry = p.Telemetry
	svc, err := New(ctx, cfg, nc, registryv1.NewRegistryServiceClient(regConn), mailboxv1.NewMailboxServiceClient(mbConn), p.Log)
	if err != nil {
		return err
	}
	defer svc.Close()
	svc.Register(srv)
	if cfg.MCPConfig != "" {
		if err := svc.MountServers(ctx, cfg.MCPConfig, servers); err != nil {
			return err
		}
	}
	p.Log.Info("bridge listening", "addr", lis.Addr().String(), "dev", cfg.Security.Dev, "replica", svc.Replica(),
		"registry", cfg.Registry, "mailbox", cfg.Mailbox, "nats", nc.ConnectedUrlRedacted())
	return srv.Serve(ctx, lis)
}
