package telemetry

import (
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"google.golang.org/grpc"
)

// ServerOptions are the options a gRPC server is built with to be counted
// and, when tracing, traced. The metrics interceptors come first in the
// chain, so a call refused by the identity guard is counted too.
func (t *Telemetry) ServerOptions() []grpc.ServerOption {
	var opts []grpc.ServerOption
	if t.calls {
		opts = append(opts,
			grpc.ChainUnaryInterceptor(t.server.UnaryServerInterceptor()),
			grpc.ChainStreamInterceptor(t.server.StreamServerInterceptor()))
	}
	if t.Tracing() {
		opts = append(opts, grpc.StatsHandler(otelgrpc.NewServerHandler(
			otelgrpc.WithTracerProvider(t.provider), otelgrpc.WithPropagators(t.prop))))
	}
	return opts
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
	var opts []grpc.DialOption
	if t.calls {
		opts = append(opts,
			grpc.WithChainUnaryInterceptor(t.client.UnaryClientInterceptor()),
			grpc.WithChainStreamInterceptor(t.client.StreamClientInterceptor()))
	}
	if t.Tracing() {
		opts = append(opts, grpc.WithStatsHandler(otelgrpc.NewClientHandler(
			otelgrpc.WithTracerProvider(t.provider), otelgrpc.WithPropagators(t.prop))))
	}
	return opts
}
