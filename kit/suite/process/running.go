package process

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/grpc"

	"github.com/switchboard-run/switchboard/kit/lib/listen"
	"github.com/switchboard-run/switchboard/kit/suite/grpcclient"
	"github.com/switchboard-run/switchboard/kit/suite/grpcserver"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/natsconn"
	"github.com/switchboard-run/switchboard/kit/suite/telemetry"
)

// Running is a started process (see Start): its logger, and the listeners,
// servers and peer connections made the one way its security choice says.
type Running struct {
	// Log is the process's logger.
	Log *slog.Logger
	// Telemetry is the process's metrics registry and tracer provider;
	// services register their own collectors on it.
	Telemetry *telemetry.Telemetry
	// Observing is the metrics and debug listeners --metrics-addr and
	// --debug-addr opened.
	Observing *Observing

	name     string
	security *Security
	// metricsKey is the metrics listener's own key (--metrics-tls-key), if
	// any: kept from the children like the process's.
	metricsKey string
	// The TLS configs, each loaded once, then shared: after Confine the
	// files may no longer be readable.
	serverTLS, clientTLS func() (*tls.Config, error)
}

func newRunning(name string, log *slog.Logger, sec *Security) *Running {
	once := func(load func() (*tls.Config, error)) func() (*tls.Config, error) {
		return sync.OnceValues(func() (*tls.Config, error) {
			c, err := load()
			if err != nil {
				return nil, fmt.Errorf("the %s's TLS: %w", name, err)
			}
			return c, nil
		})
	}
	return &Running{Log: log, name: name, security: sec, serverTLS: once(sec.ServerTLS), clientTLS: once(sec.ClientTLS)}
}

// ServerTLS is the TLS config the process serves with (nil in dev mode),
// loaded once.
func (r *Running) ServerTLS() (*tls.Config, error) { return r.serverTLS() }

// ClientTLS is the TLS config the process dials its peers with (nil in dev
// mode), loaded once for every dial.
func (r *Running) ClientTLS() (*tls.Config, error) { return r.clientTLS() }

// Dial returns a client connection to the peer at addr; in dev mode each
// call carries the suite's secret, when there is one.
func (r *Running) Dial(addr string) (*grpc.ClientConn, error) {
	c, err := r.ClientTLS()
	if err != nil {
		return nil, err
	}
	opts := r.telemetry().DialOptions()
	creds, err := r.security.ClientDevCredentials()
	if err != nil {
		return nil, err
	}
	if creds != nil {
		opts = append(opts, grpc.WithPerRPCCredentials(creds))
	}
	return grpcclient.Dial(addr, c, opts...)
}

// telemetry is the process's telemetry; a Running made without Start
// (tests) counts into a registry of its own.
func (r *Running) telemetry() *telemetry.Telemetry {
	if r.Telemetry == nil {
		r.Telemetry = telemetry.NewMetrics()
	}
	return r.Telemetry
}

// Close stops the metrics and debug listeners and flushes the traces.
func (r *Running) Close() {
	r.Observing.Close()
	if r.Telemetry != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := r.Telemetry.Shutdown(ctx); err != nil {
			r.Log.Warn("traces not flushed", "err", err)
		}
	}
}

// Listen listens on addr; in dev mode only a loopback address is allowed.
func (r *Running) Listen(addr string) (net.Listener, error) {
	return listen.TCP(addr, r.security.Dev)
}

// GRPCServer returns the process's gRPC server: its TLS (none in dev mode)
// and the identity guard with policy.
func (r *Running) GRPCServer(policy identity.Policy) (*grpcserver.Server, error) {
	c, err := r.ServerTLS()
	if err != nil {
		return nil, err
	}
	return grpcserver.New(grpcserver.Options{Logger: r.Log, TLS: c, Telemetry: r.telemetry(),
		Guard: identity.Guard{Auth: r.security.Authenticator(), Policy: policy}}), nil
}

// NATS connects to the NATS servers c names, as "switchboard <name>", with
// the process's logger hearing of losses and recoveries.
func (r *Running) NATS(c natsconn.Config) (*nats.Conn, error) {
	return c.Connect("switchboard "+r.name, r.Log)
}
