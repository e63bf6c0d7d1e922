// Package remote is how the people-facing commands reach a running suite:
// the address, the identity to call as, and TLS. Without TLS material it
// talks to the dev suite (plaintext, identity in the switchboard-identity
// header), which is what `make run` starts.
package remote

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"os/user"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/switchboard-run/switchboard/kit/suite/certs"
	"github.com/switchboard-run/switchboard/kit/suite/grpcclient"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/ports"
	"github.com/switchboard-run/switchboard/kit/suite/process"
)

// Flags are a command's connection flags.
type Flags struct {
	Addr string
	// Registry, Mailbox and Bridge override Addr for one service, for a
	// split deployment where each listens apart.
	Registry, Mailbox, Bridge string
	Identity                  string
	// Grade is the dev-mode grade to call as; admin by default, since dev
	// mode trusts whoever reaches loopback anyway.
	Grade  string
	Files  certs.Files
	Server string
	// DevSecretFile names the dev suite's per-run secret; empty: the one
	// switchboard dev wrote where a client finds it (process.FindDevSecret).
	DevSecretFile string
}

// Register adds --addr, --registry, --mailbox, --bridge, --as, --as-grade
// and the --tls-* flags.
func (f *Flags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.Addr, "addr", ports.SuiteAddr, "the suite's gRPC address (switchboard dev serves every service there)")
	fs.StringVar(&f.Registry, "registry", "", "the registry's gRPC address, when it is not --addr (a split deployment)")
	fs.StringVar(&f.Mailbox, "mailbox", "", "the mailbox's gRPC address, when it is not --addr")
	fs.StringVar(&f.Bridge, "bridge", "", "the bridge's gRPC address, when it is not --addr")
	fs.StringVar(&f.Identity, "as", defaultIdentity(), "the identity to call as in dev mode (sent as the switchboard-identity header)")
	fs.StringVar(&f.Grade, "as-grade", string(identity.Admin), "the grade to call as in dev mode: host, driver or admin (sent as the switchboard-grade header)")
	fs.StringVar(&f.DevSecretFile, "dev-secret-file", "", "the dev suite's per-run secret, sent with every call (default: the dev-secret of $SWITCHBOARD_DATA, ./.data or ~/.local/share/switchboard, whichever exists first)")
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

// Conn is the connections to the suite and the way to call on them.
type Conn struct {
	*grpc.ClientConn // to --addr
	byAddr           map[string]*grpc.ClientConn
	flags            *Flags
	tls              *tls.Config
	dev              bool
	id               identity.Identity
}

// Dial connects as the flags say: to --addr, and to each service address
// given apart. A malformed address is an error here, before any call.
// Connections are lazy: nothing is reached until the first call.
func (f *Flags) Dial() (*Conn, error) {
	c := &Conn{byAddr: map[string]*grpc.ClientConn{}, flags: f}
	var opts []grpc.DialOption
	if f.Files.Empty() {
		creds, err := f.devCredentials()
		if err != nil {
			return nil, err
		}
		if creds != nil {
			opts = append(opts, grpc.WithPerRPCCredentials(creds))
		}
		if err := identity.CheckName(f.Identity); err != nil {
			return nil, fmt.Errorf("--as: %w", err)
		}
		grade := identity.Admin
		if f.Grade != "" {
			var err error
			if grade, err = identity.ParseGrade(f.Grade); err != nil {
				return nil, fmt.Errorf("--as-grade: %w", err)
			}
		}
		c.dev, c.id = true, identity.Identity{Name: f.Identity, Grade: grade}
	} else {
		var err error
		if c.tls, err = f.Files.ClientConfig(f.Server); err != nil {
			return nil, err
		}
	}
	for i, addr := range []string{f.Addr, f.Registry, f.Mailbox, f.Bridge} {
		if (i > 0 && addr == "") || c.byAddr[addr] != nil {
			continue // a service without an address of its own is at --addr
		}
		cc, err := grpcclient.Dial(addr, c.tls, opts...)
		if err != nil {
			c.Close()
			return nil, err
		}
		c.byAddr[addr] = cc
	}
	c.ClientConn = c.byAddr[f.Addr]
	return c, nil
}

// devCredentials carry the dev suite's secret: --dev-secret-file's, else
// the one a client finds by itself (nil when there is none: a suite
// without one).
func (f *Flags) devCredentials() (credentials.PerRPCCredentials, error) {
	path := f.DevSecretFile
	if path == "" {
		if path = process.FindDevSecret(); path == "" {
			return nil, nil
		}
	}
	c, err := process.DevCredentials(path)
	if err != nil && f.DevSecretFile != "" {
		return nil, fmt.Errorf("--dev-secret-file: %w", err)
	}
	return c, err
}

// service is the connection to a service's own address, or to --addr.
func (c *Conn) service(addr string) grpc.ClientConnInterface {
	if addr == "" {
		return c.ClientConn
	}
	return c.byAddr[addr]
}

// Registry is the connection to the registry.
func (c *Conn) Registry() grpc.ClientConnInterface { return c.service(c.flags.Registry) }

// Mailbox is the connection to the mailbox.
func (c *Conn) Mailbox() grpc.ClientConnInterface { return c.service(c.flags.Mailbox) }

// Bridge is the connection to the bridge.
func (c *Conn) Bridge() grpc.ClientConnInterface { return c.service(c.flags.Bridge) }

// Close closes every connection.
func (c *Conn) Close() error {
	for _, cc := range c.byAddr {
		cc.Close()
	}
	return nil
}

// Ctx returns ctx carrying the caller's identity for the dev suite; with
// TLS the certificate speaks and ctx is returned as is.
func (c *Conn) Ctx(ctx context.Context) context.Context {
	if !c.dev {
		return ctx
	}
	return identity.As(ctx, c.id)
}

// Open dials as Dial does and returns, with the connections, ctx bounded by
// timeout and naming the caller (Ctx): what a command that makes a few
// calls needs. done closes the connections and releases ctx.
func (f *Flags) Open(ctx context.Context, timeout time.Duration) (c *Conn, callCtx context.Context, done func(), err error) {
	if c, err = f.Dial(); err != nil {
		return nil, nil, nil, err
	}
	callCtx, cancel := context.WithTimeout(ctx, timeout)
	return c, c.Ctx(callCtx), func() { cancel(); c.Close() }, nil
}
