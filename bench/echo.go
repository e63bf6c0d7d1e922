package main

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/switchboard-run/switchboard/kit/lib/listen"
	"github.com/switchboard-run/switchboard/kit/lib/logging"
	"github.com/switchboard-run/switchboard/kit/suite/grpcserver"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
)

// The floor: a plain unary echo served the way the suite serves (the kit's
// server with its interceptor chain and identity guard, dev mode), in a
// process of its own, over loopback.

const echoMethod = "/bench.Echo/Echo"

var echoDesc = grpc.ServiceDesc{
	ServiceName: "bench.Echo",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Echo",
		Handler: func(_ any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
			in := new(wrapperspb.StringValue)
			if err := dec(in); err != nil {
				return nil, err
			}
			h := func(_ context.Context, req any) (any, error) { return req, nil }
			if icpt == nil {
				return h(ctx, in)
			}
			return icpt(ctx, in, &grpc.UnaryServerInfo{FullMethod: echoMethod}, h)
		},
	}},
}

// serveEcho is the re-executed bench binary's echo mode.
func serveEcho(ctx context.Context, addr string) error {
	srv := grpcserver.New(grpcserver.Options{Logger: logging.Discard(),
		Guard: identity.Guard{Auth: identity.Authenticator{Dev: true}, Policy: identity.Policy{echoMethod: identity.Any}}})
	srv.RegisterService(&echoDesc, struct{}{})
	srv.Serving("bench.Echo")
	lis, err := listen.TCP(addr, true)
	if err != nil {
		return err
	}
	return srv.Serve(ctx, lis)
}

func echo(ctx context.Context, cc *grpc.ClientConn, msg *wrapperspb.StringValue) error {
	return cc.Invoke(ctx, echoMethod, msg, new(wrapperspb.StringValue))
}
