// Package grpcserver serves the suite's gRPC services the one way they are
// all served: grpc.health.v1 and reflection registered, a 16 MiB message
// limit, a bound on the streams of one connection, keepalive enforcement,
// one interceptor chain (panic recovery, slog request logging,
// identity and grade policy), and a graceful shutdown that ends with a hard
// stop.
package grpcserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/telemetry"
)

// MaxMessageBytes bounds every gRPC message and HTTP body (docs/design.md §4).
const MaxMessageBytes = 16 << 20

// MaxConcurrentStreams bounds the calls one connection may have open at
// once (docs/security.md): one peer cannot pile up handlers
// without end. It sits well above what a suite peer holds on its one
// connection — a bridge's Follow stream per mount, a gateway's waits on
// behalf of its callers — and a grpc-go client that reaches it waits for a
// call to end before it opens the next; a peer that ignores the bound has
// the streams past it refused (REFUSED_STREAM).
const MaxConcurrentStreams = 4096

// Options configures a Server.
type Options struct {
	// Logger receives request logs (debug) and failures (error).
	Logger *slog.Logger
	// Guard authenticates each call and applies the grade policy.
	Guard identity.Guard
	// TLS is the listener's TLS config; nil serves plaintext (dev mode).
	TLS *tls.Config
	// ShutdownGrace bounds the graceful stop before a hard stop (default 10 s).
	ShutdownGrace time.Duration
	// Telemetry counts and traces every call; nil counts nothing.
	Telemetry *telemetry.Telemetry
}

// Server is a gRPC server with health, reflection and the interceptor chain.
type Server struct {
	GRPC   *grpc.Server
	Health *health.Server

	log   *slog.Logger
	grace time.Duration
	tel   *telemetry.Telemetry

	// inproc serves the same services to callers in this process.
	inproc  *inProcess
	serving sync.Once // the first Serve: services are registered

	mu      sync.Mutex
	drains  []func()
	names   []string
	stopped bool
}

// New builds a server. Register services on it (it is a
// grpc.ServiceRegistrar), then call Serve.
func New(opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.ShutdownGrace == 0 {
		opts.ShutdownGrace = 10 * time.Second
	}
	onPanic := recovery.WithRecoveryHandlerContext(func(ctx context.Context, p any) error {
		opts.Logger.ErrorContext(ctx, "handler panicked", "panic", p, "stack", string(debug.Stack()))
		return status.Error(codes.Internal, "internal error: the handler panicked; the server log has the stack")
	})
	logged := callLog{opts.Logger}
	// The metrics interceptors come first, so a call the guard refuses is
	// counted too.
	tel := opts.Telemetry.Server()
	unary := []grpc.UnaryServerInterceptor{recovery.UnaryServerInterceptor(onPanic), logged.unary, opts.Guard.Unary}
	stream := []grpc.StreamServerInterceptor{recovery.StreamServerInterceptor(onPanic), logged.stream, opts.Guard.Stream}
	if tel.Unary != nil {
		unary = append([]grpc.UnaryServerInterceptor{tel.Unary}, unary...)
		stream = append([]grpc.StreamServerInterceptor{tel.Stream}, stream...)
	}
	sopts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(MaxMessageBytes),
		grpc.MaxSendMsgSize(MaxMessageBytes),
		grpc.MaxConcurrentStreams(MaxConcurrentStreams),
		// Hosts park on Follow streams for hours: let them keep the
		// connection alive, and drop peers that vanish without a FIN. A
		// peer that pings more often than every 5 s is sent GOAWAY
		// (too_many_pings): keepalives cannot be a flood.
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 30 * time.Second, Timeout: 10 * time.Second}),
		// A pool of workers whose stacks stay grown serves the streams: a
		// fresh goroutine per call cost a tenth of a routed call's CPU
		// growing its stack (docs/bench.md).
		grpc.NumStreamWorkers(streamWorkers()),
		grpc.ChainUnaryInterceptor(unary...),
		grpc.ChainStreamInterceptor(stream...),
	}
	if tel.Stats != nil {
		sopts = append(sopts, grpc.StatsHandler(tel.Stats))
	}
	if opts.TLS != nil {
		sopts = append(sopts, grpc.Creds(credentials.NewTLS(opts.TLS)))
	}
	s := &Server{
		GRPC:   grpc.NewServer(sopts...),
		inproc: newInProcess(unary, stream, tel.Stats, opts.Telemetry.Client()),
		Health: health.NewServer(),
		log:    opts.Logger,
		grace:  opts.ShutdownGrace,
		tel:    opts.Telemetry,
	}
	healthpb.RegisterHealthServer(s, s.Health)
	reflection.Register(s.GRPC)
	return s
}

// streamWorkers is the size of the pool serving streams: 64 a core.
func streamWorkers() uint32 { return uint32(64 * runtime.GOMAXPROCS(0)) }

// levelFor logs successes and caller mistakes at debug, and server-side
// failures loudly.
func levelFor(c codes.Code) logging.Level {
	switch c {
	case codes.Internal, codes.Unknown, codes.DataLoss, codes.Unimplemented:
		return logging.LevelError
	default:
		return logging.LevelDebug
	}
}

// Serving marks a service SERVING in health (name as in its descriptor, e.g.
// "switchboard.mailbox.v1.MailboxService"), and records it so shutdown marks
// it NOT_SERVING first.
func (s *Server) Serving(name string) {
	s.mu.Lock()
	s.names = append(s.names, name)
	s.mu.Unlock()
	s.Health.SetServingStatus(name, healthpb.HealthCheckResponse_SERVING)
}

// OnDrain registers f to run when shutdown starts, after health turns
// NOT_SERVING and before the graceful stop: services end their long-lived
// streams there so the graceful stop does not wait out its grace.
func (s *Server) OnDrain(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drains = append(s.drains, f)
}

// Serve serves on lis until ctx is done, then shuts down. It returns nil
// after a shutdown, or the error that stopped serving.
func (s *Server) Serve(ctx context.Context, lis net.Listener) error {
	s.serving.Do(func() {
		if s.tel != nil {
			s.tel.InitializeServer(s.GRPC)
		}
		close(s.inproc.ready)
	})
	errc := make(chan error, 1)
	go func() { errc <- s.GRPC.Serve(lis) }()
	select {
	case err := <-errc:
		if errors.Is(err, grpc.ErrServerStopped) {
			return nil
		}
		return fmt.Errorf("serving gRPC on %s: %w", lis.Addr(), err)
	case <-ctx.Done():
		s.Shutdown()
		<-errc
		return nil
	}
}

// Shutdown marks every service NOT_SERVING, runs the drains, stops
// gracefully, and stops hard once the grace has passed. Safe to call twice.
func (s *Server) Shutdown() {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return
	}
	s.stopped = true
	drains := s.drains
	s.mu.Unlock()
	s.Health.Shutdown() // every service, and "", NOT_SERVING
	for _, f := range drains {
		f()
	}
	done := make(chan struct{})
	go func() { s.GRPC.GracefulStop(); close(done) }()
	t := time.NewTimer(s.grace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		s.log.Warn("graceful stop took too long; stopping hard", "grace", s.grace)
		s.GRPC.Stop()
		<-done
	}
}
