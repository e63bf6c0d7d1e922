// Package natsserver runs a real NATS server with JetStream inside the
// process: the store of the embedded suite (`switchboard dev`), and the
// NATS the tests run against — one node, or a cluster on loopback ports.
// It is the nats-server module itself, not a stand-in.
package natsserver

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// startTimeout bounds how long a server may take to accept connections.
const startTimeout = 30 * time.Second

// MaxPayload is the largest message the embedded server takes: above the
// suite's 16 MiB message limit, so an input or a capture at that limit is
// stored whole (NATS's default is 1 MiB).
const MaxPayload = 24 << 20

// Options configure one server.
type Options struct {
	// Dir holds JetStream's file storage. Required.
	Dir string
	// Listen is the client address ("127.0.0.1:4222", port 0 for any); empty
	// serves in-process connections only (Connect).
	Listen string
	// Name names the server; required in a cluster, where names are unique.
	Name string
	// Cluster, when set, joins this server to a cluster.
	Cluster *Cluster
	// MaxStore bounds JetStream's disk use in bytes (0: the server's default,
	// most of the free disk).
	MaxStore int64
	// TLS, when set, is required of clients and of the cluster's routes;
	// its ClientCAs verify the peers' certificates (mutual TLS), and each
	// certificate is mapped to its user in kit/suite/natsusers: a client whose
	// certificate names no user is refused, one that does gets that
	// user's subjects only, and a route is taken only from a node's
	// certificate (see users.go).
	TLS *tls.Config
	// Log receives the server's warnings and errors (nil: discarded).
	Log *slog.Logger
}

// Cluster is a server's place in a cluster.
type Cluster struct {
	// Name is the cluster's name, the same on every node.
	Name string
	// Listen is this node's route address ("127.0.0.1:0" for any port).
	Listen string
	// Routes are the other nodes' route addresses (host:port).
	Routes []string
	// Advertise is the route address the others are told to dial this node
	// at (host:port); empty: its IP, which a certificate naming the node's
	// host name does not cover.
	Advertise string
}

// Server is one running server.
type Server struct {
	ns *server.Server
	o  Options // as started, for Restart
}

// Start runs a server and waits until it accepts connections.
func Start(o Options) (*Server, error) {
	if o.Dir == "" {
		return nil, errors.New("natsserver: no storage directory: JetStream keeps its files in one")
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the NATS storage directory: %w", err)
	}
	opts := &server.Options{
		ServerName:             o.Name,
		JetStream:              true,
		StoreDir:               o.Dir,
		JetStreamMaxStore:      o.MaxStore,
		NoSigs:                 true,
		MaxPayload:             MaxPayload,
		DisableJetStreamBanner: true,
		DontListen:             o.Listen == "",
	}
	if o.Listen != "" {
		host, port, err := splitHostPort(o.Listen)
		if err != nil {
			return nil, fmt.Errorf("NATS listen address %q: %w", o.Listen, err)
		}
		opts.Host, opts.Port = host, port
		if port == 0 {
			opts.Port = server.RANDOM_PORT
		}
	}
	if c := o.Cluster; c != nil {
		if err := clusterOptions(opts, c); err != nil {
			return nil, err
		}
	}
	if o.TLS != nil {
		if err := mapUsers(opts, o.TLS); err != nil {
			return nil, err
		}
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("starting NATS: %w", err)
	}
	logs := &logAdapter{log: o.Log}
	ns.SetLoggerV2(logs, false, false, false)
	go ns.Start()
	if err := waitReady(ns, logs); err != nil {
		ns.Shutdown()
		return nil, fmt.Errorf("NATS with storage in %s: %w", o.Dir, err)
	}
	// Restart binds the same addresses again: the ports bound now.
	if a := ns.Addr(); a != nil {
		o.Listen = a.String()
	}
	if c := o.Cluster; c != nil {
		bound := *c
		if a := ns.ClusterAddr(); a != nil {
			bound.Listen = a.String()
		}
		o.Cluster = &bound
	}
	return &Server{ns: ns, o: o}, nil
}

// Restart starts a server shut down before, on the same storage and the
// same client and route addresses (a node lost and back), and waits until
// it accepts connections.
func (s *Server) Restart() (*Server, error) { return Start(s.o) }

// ErrListen is a server that could not bind one of its addresses (a port
// another process holds); a caller that picked the port may pick another.
var ErrListen = errors.New("an address could not be bound")

// waitReady waits until ns accepts connections, or says why it never will:
// a server that fails to listen reports it only through its log, and
// waiting the whole startTimeout for it would hide the reason.
func waitReady(ns *server.Server, logs *logAdapter) error {
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		if ns.ReadyForConnections(50 * time.Millisecond) {
			return nil
		}
		if msg := logs.fatal(); msg != "" {
			if strings.HasPrefix(msg, "Error listening on") {
				return fmt.Errorf("%w: %s", ErrListen, msg)
			}
			return errors.New(msg)
		}
	}
	return fmt.Errorf("did not accept connections within %v", startTimeout)
}

// routePingInterval and routeMaxPingsOut: the others give up on a node
// cut off the network, not stopped, within about 20 s rather than the
// server's 60–90 s, during which they go on routing messages to its clients.
const (
	routePingInterval = 5 * time.Second
	routeMaxPingsOut  = 3
)

func clusterOptions(opts *server.Options, c *Cluster) error {
	if opts.ServerName == "" {
		return errors.New("natsserver: a cluster node needs a name")
	}
	host, port, err := splitHostPort(c.Listen)
	if err != nil {
		return fmt.Errorf("NATS cluster address %q: %w", c.Listen, err)
	}
	opts.Cluster = server.ClusterOpts{Name: c.Name, Host: host, Port: port,
		Advertise: c.Advertise, PingInterval: routePingInterval, MaxPingsOut: routeMaxPingsOut}
	if port == 0 {
		opts.Cluster.Port = server.RANDOM_PORT
	}
	for _, r := range c.Routes {
		u, err := url.Parse("nats-route://" + r)
		if err != nil {
			return fmt.Errorf("NATS route %q: %w", r, err)
		}
		opts.Routes = append(opts.Routes, u)
	}
	return nil
}

func splitHostPort(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("port %q is not a number from 0 to 65535", p)
	}
	return host, port, nil
}

// ClientURL is the address clients dial ("nats://127.0.0.1:4222"); empty
// when the server serves in-process connections only.
func (s *Server) ClientURL() string {
	if s.ns.Addr() == nil {
		return ""
	}
	return s.ns.ClientURL()
}

// RouteAddr is this node's cluster address, for the other nodes' Routes.
func (s *Server) RouteAddr() string {
	if a := s.ns.ClusterAddr(); a != nil {
		return a.String()
	}
	return ""
}

// Name is the server's name.
func (s *Server) Name() string { return s.ns.Name() }

// Health reports whether this node serves JetStream with every stream and
// consumer it holds current: a node restarted while its streams catch up
// answers clients at once, but is not yet a replica a quorum can count on.
func (s *Server) Health() error {
	h := s.ns.Healthz(nil)
	if h.StatusCode == http.StatusOK {
		return nil
	}
	if h.Error == "" {
		h.Error = h.Status
	}
	return fmt.Errorf("NATS node %s is not ready: %s", s.ns.Name(), h.Error)
}

// InProcess is the connection option that reaches this server without a
// socket (what the embedded suite's services use).
func (s *Server) InProcess() nats.Option { return nats.InProcessServer(s.ns) }

// Shutdown stops the server and waits until it has.
func (s *Server) Shutdown() {
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
}

// logAdapter passes the server's warnings and errors to slog; its notices,
// debug and trace lines are dropped (the suite logs what it does itself).
// The first fatal message is kept: it is why a server did not start.
type logAdapter struct {
	log       *slog.Logger
	mu        sync.Mutex
	firstFail string
}

func (l *logAdapter) fatal() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.firstFail
}

func (l *logAdapter) Noticef(string, ...any) {}
func (l *logAdapter) Debugf(string, ...any)  {}
func (l *logAdapter) Tracef(string, ...any)  {}
func (l *logAdapter) Warnf(format string, v ...any) {
	if l.log == nil {
		return
	}
	// The large payload is MaxPayload, chosen (above): the server's advice
	// against it would greet every start of the suite as a warning.
	if strings.HasPrefix(format, "Maximum payloads over") {
		l.log.Debug("nats: " + fmt.Sprintf(format, v...))
		return
	}
	l.log.Warn("nats: " + fmt.Sprintf(format, v...))
}
func (l *logAdapter) Errorf(format string, v ...any) {
	if l.log != nil {
		l.log.Error("nats: " + fmt.Sprintf(format, v...))
	}
}
func (l *logAdapter) Fatalf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	l.mu.Lock()
	if l.firstFail == "" {
		l.firstFail = msg
	}
	l.mu.Unlock()
	if l.log != nil {
		l.log.Error("nats (fatal): " + msg)
	}
}
