// Package natsconn connects a service to the NATS cluster that holds the
// suite's state: the --nats flags (addresses, credentials, TLS, replicas)
// and one way to connect, with reconnects that never give up.
package natsconn

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/switchboard-run/switchboard/kit/suite/natsusers"
)

// Config is how a service reaches NATS.
type Config struct {
	// URLs are the servers to dial, comma-separated ("nats://a:4222,nats://b:4222").
	URLs string
	// Creds is a NATS credentials file (a user JWT and its nkey seed).
	Creds string
	// CA, Cert and Key are PEM files for TLS to NATS: the CA alone checks
	// the servers; with a certificate and key the connection is mutual.
	CA, Cert, Key string
	// Replicas is how many copies JetStream keeps of each stream and bucket:
	// 1 on one node, 3 on a three-node cluster.
	Replicas int
}

// Register adds --nats, --nats-creds, --nats-tls-ca, --nats-tls-cert,
// --nats-tls-key and --nats-replicas.
func (c *Config) Register(fs *flag.FlagSet) {
	fs.StringVar(&c.URLs, "nats", c.URLs, "comma-separated NATS server URLs holding the suite's state (nats://host:4222, tls://host:4222)")
	fs.StringVar(&c.Creds, "nats-creds", "", "NATS credentials file (user JWT and nkey seed)")
	fs.StringVar(&c.CA, "nats-tls-ca", "", "PEM file of the CA that signs the NATS servers' certificates")
	fs.StringVar(&c.Cert, "nats-tls-cert", "", "PEM certificate for mutual TLS to NATS")
	fs.StringVar(&c.Key, "nats-tls-key", "", "PEM key of --nats-tls-cert")
	fs.IntVar(&c.Replicas, "nats-replicas", 1, "copies JetStream keeps of each stream and bucket (3 on a three-node cluster)")
}

// Check refuses settings that cannot work, naming the flag.
func (c Config) Check() error {
	var errs []error
	if c.Replicas < 0 || c.Replicas > 5 { // 0 is JetStream's default, 1
		errs = append(errs, fmt.Errorf("--nats-replicas %d: JetStream keeps 1 to 5 copies", c.Replicas))
	}
	if (c.Cert == "") != (c.Key == "") {
		errs = append(errs, errors.New("--nats-tls-cert and --nats-tls-key go together"))
	}
	for _, u := range c.list() {
		if !strings.Contains(u, "://") {
			errs = append(errs, fmt.Errorf("--nats %q: write each server as a URL, such as nats://%s", u, u))
		}
	}
	return errors.Join(errs...)
}

func (c Config) list() []string {
	var out []string
	for _, u := range strings.Split(c.URLs, ",") {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, u)
		}
	}
	return out
}

// FlusherTimeout bounds a write to NATS: one stuck longer means the server
// stopped reading (a node cut off the network), and the connection moves.
const FlusherTimeout = 5 * time.Second

// Connect dials the servers of c as name (the connection's name in NATS's
// monitoring). A server that cannot be reached now is an error naming the
// URLs; once connected, the connection reconnects for as long as the
// process lives, and log hears of each loss and recovery. extra is added
// last (the embedded suite passes its in-process server here).
func (c Config) Connect(name string, log *slog.Logger, extra ...nats.Option) (*nats.Conn, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	opts := []nats.Option{
		nats.Name(name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.ReconnectJitter(100*time.Millisecond, time.Second),
		// A node cut off the network is given up on within 10–15 s (NATS's
		// own 2 min and two would stall calls minutes; docs/deploy.md).
		nats.PingInterval(5 * time.Second),
		nats.MaxPingsOutstanding(2),
		// A busy client's writes to such a node block instead, holding the
		// connection's lock, so its pings never go out: a write stuck
		// FlusherTimeout reconnects (NATS's own waits a minute).
		nats.FlusherTimeout(FlusherTimeout),
		nats.ReconnectOnFlusherError(),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			if sub != nil {
				log.Warn("NATS", "subject", sub.Subject, "err", err)
				return
			}
			log.Warn("NATS", "err", err)
		}),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("lost NATS; reconnecting", "err", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) { log.Info("NATS is back", "server", nc.ConnectedUrlRedacted()) }),
	}
	if c.Creds != "" {
		opts = append(opts, nats.UserCredentials(c.Creds))
	}
	if c.CA != "" || c.Cert != "" {
		t, err := c.tls()
		if err != nil {
			return nil, err
		}
		opts = append(opts, nats.Secure(t))
		if u, ok := user(t); ok {
			// The suite's NATS lets each user read its own replies only.
			opts = append(opts, nats.CustomInboxPrefix(natsusers.Inbox(u.Name)))
		}
	}
	opts = append(opts, extra...)
	nc, err := nats.Connect(strings.Join(c.list(), ","), opts...)
	if err != nil {
		where := c.URLs
		if where == "" {
			where = "the embedded server"
		}
		return nil, fmt.Errorf("cannot reach NATS at %s: %w", where, err)
	}
	return nc, nil
}

// user is the NATS user the certificate of t is mapped to (CN=<name>,
// OU=service, a row of kit/suite/natsusers), if it is one.
func user(t *tls.Config) (natsusers.User, bool) {
	if len(t.Certificates) == 0 || t.Certificates[0].Leaf == nil {
		return natsusers.User{}, false
	}
	subj := t.Certificates[0].Leaf.Subject
	if len(subj.OrganizationalUnit) != 1 || subj.OrganizationalUnit[0] != "service" {
		return natsusers.User{}, false
	}
	return natsusers.Lookup(subj.CommonName)
}

func (c Config) tls() (*tls.Config, error) {
	t := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.CA != "" {
		pem, err := os.ReadFile(c.CA)
		if err != nil {
			return nil, fmt.Errorf("--nats-tls-ca: %w", err)
		}
		t.RootCAs = x509.NewCertPool()
		if !t.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--nats-tls-ca %s holds no PEM certificate", c.CA)
		}
	}
	if c.Cert != "" {
		pair, err := tls.LoadX509KeyPair(c.Cert, c.Key)
		if err != nil {
			return nil, fmt.Errorf("--nats-tls-cert/--nats-tls-key: %w", err)
		}
		t.Certificates = []tls.Certificate{pair}
	}
	return t, nil
}
