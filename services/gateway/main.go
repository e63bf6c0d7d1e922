package gateway

import (
	"context"
	"io"

	"google.golang.org/grpc"

	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/process"
)

// devSelf is the identity the gateway names itself with in dev mode; in
// production its certificate speaks for it.
var devSelf = identity.Identity{Name: "gateway", Grade: identity.Service}

// Main runs the gateway alone: it parses args (flags with SWITCHBOARD_*
// fallbacks), dials the backends, listens, and serves until ctx is done.
// Both cmd/gateway and `switchboard gateway` call it.
func Main(ctx context.Context, args []string, stderr io.Writer) error {
	var cfg Config
	p, err := process.Start("gateway", &cfg, args, stderr)
	if err != nil {
		return err
	}
	defer p.Close()
	// New loads the listener's TLS; this is what dials the backends.
	clientTLS, err := p.ClientTLS()
	if err != nil {
		return err
	}
	self, err := cfg.Security.ActingSelf(devSelf.Name, clientTLS)
	if err != nil {
		return err
	}
	var conns [3]*grpc.ClientConn
	for i, addr := range []string{cfg.Registry, cfg.Mailbox, cfg.Bridge} {
		if conns[i], err = p.Dial(addr); err != nil {
			return err
		}
		defer conns[i].Close()
	}
	cfg.Telemetry = p.Telemetry
	g, err := New(cfg, Backends{Registry: conns[0], Mailbox: conns[1], Bridge: conns[2], Self: self}, p.Log)
	if err != nil {
		return err
	}
	lis, err := p.Listen(cfg.Listen)
	if err != nil {
		return err
	}
	p.Log.Info("gateway listening", "addr", lis.Addr().String(), "dev", cfg.Security.Dev,
		"registry", cfg.Registry, "mailbox", cfg.Mailbox, "bridge", cfg.Bridge, "as", self.String())
	return g.Serve(ctx, lis)
}
