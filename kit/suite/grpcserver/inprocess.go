package grpcserver

import (
	"context"

	"github.com/fullstorydev/grpchan"
	"github.com/fullstorydev/grpchan/inprocgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/switchboard-run/switchboard/kit/suite/telemetry"
)

// newInProcess builds the channel that serves this server's services to
// callers in its own process: each call runs the same interceptor chain
// (metrics, recovery, logging, the identity guard) and the same stats
// handler as one over the network, without HTTP/2 or marshalling.
func newInProcess(unary []grpc.UnaryServerInterceptor, stream []grpc.StreamServerInterceptor, server stats.Handler, client telemetry.GRPCClient) *inProcess {
	p := &inProcess{unary: chainUnary(unary), stream: chainStream(stream), client: client, asStreams: map[string]bool{}, ready: make(chan struct{})}
	p.ch = new(inprocgrpc.Channel).
		WithServerUnaryInterceptor(p.unary).
		WithServerStreamInterceptor(p.intercept).
		WithCloner(boundedCloner{})
	if server != nil {
		p.ch = p.ch.WithServerStatsHandler(server)
	}
	if client.Stats != nil {
		p.ch = p.ch.WithClientStatsHandler(client.Stats)
	}
	return p
}

// inProcess is the channel and what it needs to serve a unary method
// called as a stream, as a network server does: mailboxcall reads a Call's
// header before its reply that way.
type inProcess struct {
	ch        *inprocgrpc.Channel
	unary     grpc.UnaryServerInterceptor
	stream    grpc.StreamServerInterceptor
	client    telemetry.GRPCClient // the callers' metrics interceptors
	asStreams map[string]bool      // full names of unary methods also served as streams; written before serving

	// ready is closed by the first Serve, once every service is
	// registered: a call waits for it, as a network call waits for the
	// listener to accept.
	ready chan struct{}
}

// await waits until the server serves, or ctx ends.
func (p *inProcess) await(ctx context.Context) error {
	select {
	case <-p.ready:
		return nil
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	}
}

// register adds desc's service with each unary method also a stream.
func (p *inProcess) register(desc *grpc.ServiceDesc, impl any) {
	d := *desc
	d.Streams = append([]grpc.StreamDesc(nil), desc.Streams...)
	for _, m := range desc.Methods {
		d.Streams = append(d.Streams, grpc.StreamDesc{StreamName: m.MethodName, Handler: p.unaryAsStream(m)})
		p.asStreams["/"+desc.ServiceName+"/"+m.MethodName] = true
	}
	p.ch.RegisterService(&d, impl)
}

// unaryAsStream serves m to a stream: one request, one reply, through the
// unary chain; a header the handler sends reaches the caller at once.
func (p *inProcess) unaryAsStream(m grpc.MethodDesc) grpc.StreamHandler {
	return func(srv any, ss grpc.ServerStream) error {
		out, err := m.Handler(srv, ss.Context(), ss.RecvMsg, p.unary)
		if err != nil {
			return err
		}
		return ss.SendMsg(out)
	}
}

// intercept runs the stream chain, except for a unary method called as a
// stream, which runs the unary chain inside unaryAsStream instead.
func (p *inProcess) intercept(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if p.asStreams[info.FullMethod] {
		return h(srv, ss)
	}
	return p.stream(srv, ss, info, h)
}

// RegisterService registers a service on the network server and on the
// in-process channel both.
func (s *Server) RegisterService(desc *grpc.ServiceDesc, impl any) {
	s.GRPC.RegisterService(desc, impl)
	s.inproc.register(desc, impl)
}

// InProcess returns a client of this server's services for callers in the
// same process (switchboard dev). Its calls wait for the first Serve, carry
// opts (the caller's credentials) and the client's metrics, as a dialled
// connection's would, and are served exactly as network calls.
func (s *Server) InProcess(opts ...grpc.CallOption) grpc.ClientConnInterface {
	tel := s.inproc.client
	unary := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, o ...grpc.CallOption) error {
		if err := s.inproc.await(ctx); err != nil {
			return err
		}
		o = append(o, opts...)
		if tel.Unary != nil {
			return tel.Unary(ctx, method, req, reply, cc, invoker, o...)
		}
		return invoker(ctx, method, req, reply, cc, o...)
	}
	stream := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, o ...grpc.CallOption) (grpc.ClientStream, error) {
		if err := s.inproc.await(ctx); err != nil {
			return nil, err
		}
		o = append(o, opts...)
		if tel.Stream != nil {
			return tel.Stream(ctx, desc, cc, method, streamer, o...)
		}
		return streamer(ctx, desc, cc, method, o...)
	}
	return grpchan.InterceptClientConn(s.inproc.ch, unary, stream)
}

// boundedCloner copies messages between the two ends of an in-process call,
// so neither shares a message with the other, and refuses a message past
// MaxMessageBytes with the code and words a network peer would get.
type boundedCloner struct{}

func (boundedCloner) Copy(out, in any) error {
	src, dst, err := protos(in, out)
	if err != nil {
		return err
	}
	proto.Reset(dst)
	proto.Merge(dst, src)
	return nil
}

func (boundedCloner) Clone(in any) (any, error) {
	src, _, err := protos(in, nil)
	if err != nil {
		return nil, err
	}
	return proto.Clone(src), nil
}

func protos(in, out any) (src, dst proto.Message, err error) {
	src, ok := in.(proto.Message)
	if !ok {
		return nil, nil, status.Errorf(codes.Internal, "in-process call: %T is not a protobuf message", in)
	}
	if n := proto.Size(src); n > MaxMessageBytes {
		return nil, nil, status.Errorf(codes.ResourceExhausted, "grpc: received message larger than max (%d vs. %d)", n, MaxMessageBytes)
	}
	if out == nil {
		return src, nil, nil
	}
	if dst, ok = out.(proto.Message); !ok {
		return nil, nil, status.Errorf(codes.Internal, "in-process call: %T is not a protobuf message", out)
	}
	return src, dst, nil
}

// chainUnary runs ints in order around the handler, as
// grpc.ChainUnaryInterceptor does for a server.
func chainUnary(ints []grpc.UnaryServerInterceptor) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		for i := len(ints) - 1; i >= 0; i-- {
			next, ic := h, ints[i]
			h = func(ctx context.Context, req any) (any, error) { return ic(ctx, req, info, next) }
		}
		return h(ctx, req)
	}
}

// chainStream is chainUnary for streams.
func chainStream(ints []grpc.StreamServerInterceptor) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		for i := len(ints) - 1; i >= 0; i-- {
			next, ic := h, ints[i]
			h = func(srv any, ss grpc.ServerStream) error { return ic(srv, ss, info, next) }
		}
		return h(srv, ss)
	}
}
