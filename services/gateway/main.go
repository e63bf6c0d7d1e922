package gateway

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"

	"google.golang.org/grpc"

	"github.com/switchboard-run/switchboard/kit/identity"
	"github.com/switchboard-run/switchboard/kit/process"
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
	// New loads the listener's TLS; this is what dials the backends.
	clientTLS, err := p.ClientTLS()
	if err != nil {
		return err
	}
	self, err := gatewaySelf(cfg, clientTLS)
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

// gatewaySelf is who the gateway calls its backends as: devSelf in dev
// mode, else its certificate's identity, which must be a service's. It
// fails fast: without OU=service every call on a caller's behalf would be
// refused by the backends, one request at a time.
func gatewaySelf(cfg Config, clientTLS *tls.Config) (identity.Self, error) {
	self := cfg.Security.Self(devSelf.Name)
	if clientTLS == nil {
		return self, nil
	}
	leaf := clientTLS.Certificates[0].Leaf
	if leaf == nil {
		var err error
		if leaf, err = x509.ParseCertificate(clientTLS.Certificates[0].Certificate[0]); err != nil {
			return identity.Self{}, fmt.Errorf("the gateway's certificate %s: %w", cfg.Security.Files.Cert, err)
		}
	}
	id, err := identity.FromCertificate(leaf)
	if err != nil {
		return identity.Self{}, fmt.Errorf("the gateway's certificate %s: %w", cfg.Security.Files.Cert, err)
	}
	if id.Grade != identity.Service {
		return identity.Self{}, fmt.Errorf("the gateway's certificate %s names %q with grade %s: the gateway acts on behalf of its callers, which needs a service certificate (OU=service)",
			cfg.Security.Files.Cert, id.Name, id.Grade)
	}
	self.Identity = id
	return self, nil
}
