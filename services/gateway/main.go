package gateway

import (
	"context"
	"crypto/x509"
	"fmt"
	"io"

	"google.golang.org/grpc"

	"github.com/switchboard-run/switchboard/kit/config"
	"github.com/switchboard-run/switchboard/kit/grpcclient"
	"github.com/switchboard-run/switchboard/kit/identity"
	"github.com/switchboard-run/switchboard/kit/listen"
)

// devSelf is the identity the gateway names itself with in dev mode; in
// production its certificate speaks for it.
var devSelf = identity.Identity{Name: "gateway", Grade: identity.Service}

// Main runs the gateway alone: it parses args (flags with SWITCHBOARD_*
// fallbacks), dials the backends, listens, and serves until ctx is done.
// Both cmd/gateway and `switchboard gateway` call it.
func Main(ctx context.Context, args []string, stderr io.Writer) error {
	var cfg Config
	fs := config.NewFlagSet("gateway", stderr)
	cfg.Register(fs)
	log, err := cfg.Parse(fs, args, stderr)
	if err != nil {
		return err
	}
	_, clientTLS, err := cfg.Security.TLS()
	if err != nil {
		return fmt.Errorf("the gateway's TLS: %w", err)
	}
	caller := cfg.Security.Caller(devSelf.Name)
	if clientTLS != nil {
		// Fail fast: without OU=service every call on a caller's behalf
		// would be refused by the backends, one request at a time.
		leaf := clientTLS.Certificates[0].Leaf
		if leaf == nil {
			if leaf, err = x509.ParseCertificate(clientTLS.Certificates[0].Certificate[0]); err != nil {
				return fmt.Errorf("the gateway's certificate %s: %w", cfg.Security.Files.Cert, err)
			}
		}
		self, err := identity.FromCertificate(leaf)
		if err != nil {
			return fmt.Errorf("the gateway's certificate %s: %w", cfg.Security.Files.Cert, err)
		}
		if self.Grade != identity.Service {
			return fmt.Errorf("the gateway's certificate %s names %q with grade %s: the gateway acts on behalf of its callers, which needs a service certificate (OU=service)",
				cfg.Security.Files.Cert, self.Name, self.Grade)
		}
		caller.Self = self
	}
	var conns [3]*grpc.ClientConn
	for i, addr := range []string{cfg.Registry, cfg.Mailbox, cfg.Bridge} {
		if conns[i], err = grpcclient.Dial(addr, clientTLS); err != nil {
			return err
		}
		defer conns[i].Close()
	}
	g, err := New(cfg, Backends{Registry: conns[0], Mailbox: conns[1], Bridge: conns[2], Caller: caller}, log)
	if err != nil {
		return err
	}
	lis, err := listen.TCP(cfg.Listen, cfg.Security.Dev)
	if err != nil {
		return err
	}
	log.Info("gateway listening", "addr", lis.Addr().String(), "dev", cfg.Security.Dev,
		"registry", cfg.Registry, "mailbox", cfg.Mailbox, "bridge", cfg.Bridge, "as", caller.String())
	return g.Serve(ctx, lis)
}
