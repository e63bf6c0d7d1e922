package testkit

import (
	"context"
	"os"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/switchboard-run/switchboard/kit/suite/certs"
	"github.com/switchboard-run/switchboard/kit/suite/natsserver"
	"github.com/switchboard-run/switchboard/kit/suite/natsusers"
)

// NATS runs a real NATS server with JetStream for the test: in process, and
// on a loopback port for the processes the test starts (pass ClientURL as
// their --nats). It stops, and its storage goes, when the test ends.
func NATS(t TB) *natsserver.Server {
	t.Helper()
	return NATSAt(t, tempDir(t), "127.0.0.1:0")
}

// NATSAt runs a NATS server with its storage in dir, listening on addr
// (port 0 for any), stopped when the test ends. A test that loses NATS on
// purpose shuts one down and starts another on the same dir and address:
// what the services see is the server going away and coming back.
func NATSAt(t TB, dir, addr string) *natsserver.Server {
	t.Helper()
	ns, err := natsserver.Start(natsserver.Options{Dir: dir, Listen: addr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Shutdown)
	return ns
}

// NATSCluster runs a JetStream cluster of n nodes on loopback ports, in
// process, stopped when the test ends. A test may shut a node down first
// (a node lost).
func NATSCluster(t TB, n int) []*natsserver.Server {
	t.Helper()
	nodes, err := natsserver.StartCluster(tempDir(t), "test", n, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, s := range nodes {
			s.Shutdown()
		}
	})
	return nodes
}

// URLs is the --nats of a service that may reach any of nodes.
func URLs(nodes []*natsserver.Server) string {
	urls := make([]string, len(nodes))
	for i, s := range nodes {
		urls[i] = s.ClientURL()
	}
	return strings.Join(urls, ",")
}

// tempDir is a directory removed when the test ends (TB has no TempDir: the
// bench's Session is one too).
func tempDir(t TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "switchboard-nats-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// StreamLeader returns the node of nodes that leads stream, and how many
// copies the stream keeps besides the leader's.
func StreamLeader(t TB, nodes []*natsserver.Server, stream string) (leader *natsserver.Server, followers int) {
	t.Helper()
	nc, err := nats.Connect(URLs(nodes))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(context.Background(), stream)
	if err != nil {
		t.Fatalf("reading the stream %s: %v", stream, err)
	}
	c := s.CachedInfo().Cluster
	for _, n := range nodes {
		if n.Name() == c.Leader {
			return n, len(c.Replicas)
		}
	}
	t.Fatalf("no node is named %q, the leader of %s", c.Leader, stream)
	return nil, 0
}

// JetStream connects to the NATS at url (a list of URLs, or "" with
// nats.InProcess among opts) for the test, and closes the connection when
// the test ends.
func JetStream(t TB, url string, opts ...nats.Option) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// NATSTLS runs the suite's NATS as a deployment does (`switchboard nats`
// with --tls-*): mutual TLS with the leaf CN=nats of pki, each client's
// certificate mapped to its user of kit/suite/natsusers. Connect with a service's
// leaf (natsconn.Config, or JetStreamAs).
func NATSTLS(t TB, pki *PKI) *natsserver.Server {
	t.Helper()
	cfg, err := natsserver.TLS(pki.Leaf(t, natsusers.Node, "service"))
	if err != nil {
		t.Fatal(err)
	}
	ns, err := natsserver.Start(natsserver.Options{Dir: tempDir(t), Listen: "127.0.0.1:0", TLS: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Shutdown)
	return ns
}

// NATSFlags are the --nats and --nats-tls-* flags of a process that
// reaches ns as f's holder.
func NATSFlags(ns *natsserver.Server, f certs.Files) []string {
	return []string{"--nats", ns.ClientURL(), "--nats-tls-ca", f.CA, "--nats-tls-cert", f.Cert, "--nats-tls-key", f.Key}
}
