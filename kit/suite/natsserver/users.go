package natsserver

import (
	"crypto/tls"
	"errors"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/switchboard-run/switchboard/kit/suite/certs"
	"github.com/switchboard-run/switchboard/kit/suite/natsusers"
)

// mapUsers makes TLS the only way in (docs/security.md, "NATS"): a client
// must present a certificate of the suite's CA, which NATS maps by its
// subject to a user of kit/suite/natsusers (verify_and_map) with that user's
// subjects; a certificate no row names is refused at connect. A cluster's
// routes are taken only from a node's own certificate (CN=nats,
// OU=service), so no leaf can join as a server and read everything.
func mapUsers(opts *server.Options, t *tls.Config) error {
	if t.ClientCAs == nil || t.ClientAuth != tls.RequireAndVerifyClientCert {
		return errors.New("natsserver: TLS without verified client certificates: the suite's NATS maps each client's certificate to its user, so it needs the CA (ClientCAs) and RequireAndVerifyClientCert")
	}
	opts.TLSConfig, opts.TLSVerify, opts.TLSMap, opts.TLSTimeout = t, true, true, 5
	opts.Users = users()
	if opts.Cluster.Name != "" {
		opts.Cluster.TLSConfig, opts.Cluster.TLSTimeout = t, 5
		opts.Cluster.TLSMap, opts.Cluster.Username = true, natsusers.DN(natsusers.Node)
	}
	return nil
}

// users is kit/natsusers' table as the server's users, each named by the
// subject of the certificate it is mapped from.
func users() []*server.User {
	var out []*server.User
	for _, u := range natsusers.Users {
		p := u.Expand()
		out = append(out, &server.User{Username: natsusers.DN(u.Name), Permissions: &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: p.Publish},
			Subscribe: &server.SubjectPermission{Allow: p.Subscribe},
		}})
	}
	return out
}

// TLS is the suite's NATS's TLS from its own process directory's files:
// the CA verifies every client's certificate and, in a cluster, the
// certificate of each node this one dials a route to (NATS uses this
// config for both ends of a route, and without RootCAs the dialing end
// would look for the suite's CA among the system's).
func TLS(f certs.Files) (*tls.Config, error) {
	c, err := f.ServerConfig()
	if err != nil {
		return nil, err
	}
	c.ClientAuth = tls.RequireAndVerifyClientCert
	c.RootCAs = c.ClientCAs
	return c, nil
}
