// Package remote is how the people-facing commands reach a running suite:
// the address, the identity to call as, and TLS. Without TLS material it
// talks to the dev suite (plaintext, identity in the switchboard-identity
// header), which is what `make run` starts.
package remote

import (
	"context"
	"flag"
	"fmt"
	"os/user"

	"google.golang.org/grpc"

	"github.com/switchboard-run/switchboard/kit/certs"
	"github.com/switchboard-run/switchboard/kit/grpcclient"
	"github.com/switchboard-run/switchboard/kit/identity"
)

// Flags are a command's connection flags.
type Flags struct {
	Addr     string
	Identity string
	Files    certs.Files
	Server   string
}

// Register adds --addr, --identity and the --tls-* flags.
func (f *Flags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.Addr, "addr", "127.0.0.1:7737", "the suite's gRPC address")
	fs.StringVar(&f.Identity, "as", defaultIdentity(), "the identity to call as in dev mode (sent as the switchboard-identity header)")
	fs.StringVar(&f.Files.CA, "tls-ca", "", "PEM file of the suite's CA (mutual TLS instead of dev mode)")
	fs.StringVar(&f.Files.Cert, "tls-cert", "", "PEM file of your certificate")
	fs.StringVar(&f.Files.Key, "tls-key", "", "PEM file of your key")
	fs.StringVar(&f.Server, "tls-server-name", "", "name to check on the suite's certificate (default: the dialed host)")
}

func defaultIdentity() string {
	if u, err := user.Current(); err == nil && identity.CheckName(u.Username) == nil {
		return u.Username
	}
	return "me"
}

// Conn is a connection and the way to call on it.
type Conn struct {
	*grpc.ClientConn
	dev bool
	id  identity.Identity
}

// Dial connects as the flags say.
func (f *Flags) Dial() (*Conn, error) {
	if f.Files.Empty() {
		if err := identity.CheckName(f.Identity); err != nil {
			return nil, fmt.Errorf("--as: %w", err)
		}
		cc, err := grpcclient.Dial(f.Addr, nil)
		if err != nil {
			return nil, err
		}
		return &Conn{ClientConn: cc, dev: true, id: identity.Identity{Name: f.Identity, Grade: identity.Operator}}, nil
	}
	tlsCfg, err := f.Files.ClientConfig(f.Server)
	if err != nil {
		return nil, err
	}
	cc, err := grpcclient.Dial(f.Addr, tlsCfg)
	if err != nil {
		return nil, err
	}
	return &Conn{ClientConn: cc}, nil
}

// Ctx returns ctx carrying the caller's identity for the dev suite; with
// TLS the certificate speaks and ctx is returned as is.
func (c *Conn) Ctx(ctx context.Context) context.Context {
	if !c.dev {
		return ctx
	}
	return identity.As(ctx, c.id)
}
