package telemetry

import (
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/stats"
)

// GRPCServer is what a gRPC server needs to be counted and traced: the
// metrics interceptors (nil when calls are not counted) and the tracing
// stats handler (nil when not tracing).
type GRPCServer struct {
	Unary  grpc.UnaryServerInterceptor
	Stream grpc.StreamServerInterceptor
	Stats  stats.Handler
}

// GRPCClient is the same for a client.
type GRPCClient struct {
	Unary  grpc.UnaryClientInterceptor
	Stream grpc.StreamClientInterceptor
	Stats  stats.Handler
}

// Server returns the server side's parts; a nil Telemetry has none.
func (t *Telemetry) Server() GRPCServer { s, _ := t.grpc(); return s }

// Client returns the client side's parts; a nil Telemetry has none.
func (t *Telemetry) Client() GRPCClient { _, c := t.grpc(); return c }

func (t *Telemetry) grpc() (s GRPCServer, c GRPCClient) {
	if t == nil {
		return s, c
	}
	if t.calls {
		s.Unary, s.Stream = t.server.UnaryServerInterceptor(), t.server.StreamServerInterceptor()
		c.Unary, c.Stream = t.client.UnaryClientInterceptor(), t.client.StreamClientInterceptor()
	}
	if t.Tracing() {
		s.Stats = otelgrpc.NewServerHandler(otelgrpc.WithTracerProvider(t.provider), otelgrpc.WithPropagators(t.prop))
		c.Stats = otelgrpc.NewClientHandler(otelgrpc.WithTracerProvider(t.provider), otelgrpc.WithPropagators(t.prop))
	}
	return s, c
}

// InitializeServer gives every method of s a zero series, so a dashboard
// shows a method before its first call. Call it once services are
// registered.
func (t *Telemetry) InitializeServer(s *grpc.Server) {
	if t.calls {
		t.server.InitializeMetrics(s)
	}
}

// DialOptions are the options a client connection is dialled with to be
// counted and, when tracing, to carry the caller's trace context.
func (t *Telemetry) DialOptions() []grpc.DialOption {
	c := t.Client()
	var opts []grpc.DialOption
	if c.Unary != nil {
		opts = append(opts, grpc.WithChainUnaryInterceptor(c.Unary), grpc.WithChainStreamInterceptor(c.Stream))
	}
	if c.Stats != nil {
		opts = append(opts, grpc.WithStatsHandler(c.Stats))
	}
	return opts
}
