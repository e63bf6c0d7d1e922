package grpcserver_test

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/switchboard-run/switchboard/kit/suite/identity"
)

// whoami is a one-method service the identity tests call: it answers the
// identity the guard derived, or panics or fails when asked to.
const whoamiMethod = "/test.Whoami/Who"

var whoamiDesc = grpc.ServiceDesc{
	ServiceName: "test.Whoami",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Who",
		Handler: func(_ any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
			in := new(wrapperspb.StringValue)
			if err := dec(in); err != nil {
				return nil, err
			}
			h := func(ctx context.Context, req any) (any, error) {
				switch req.(*wrapperspb.StringValue).GetValue() {
				case "panic":
					panic("asked to")
				case "fail":
					return nil, status.Error(codes.Internal, "failing as asked")
				}
				id, err := identity.Caller(ctx)
				if err != nil {
					return nil, err
				}
				return wrapperspb.String(id.String()), nil
			}
			if icpt == nil {
				return h(ctx, in)
			}
			return icpt(ctx, in, &grpc.UnaryServerInfo{FullMethod: whoamiMethod}, h)
		},
	}},
}

func who(ctx context.Context, cc grpc.ClientConnInterface, ask string) (string, error) {
	out := new(wrapperspb.StringValue)
	err := cc.Invoke(ctx, whoamiMethod, wrapperspb.String(ask), out)
	return out.GetValue(), err
}
