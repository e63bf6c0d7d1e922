package identity

import (
	"context"
	"slices"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Policy says which grades may call each gRPC method, by full method name
// ("/switchboard.mailbox.v1.MailboxService/Invoke"). A method missing from
// the policy is refused: a new RPC is closed until someone opens it.
type Policy map[string][]Grade

// Merge returns a policy holding every entry of ps; used where several
// services share one server (the embedded dev suite).
func Merge(ps ...Policy) Policy {
	out := Policy{}
	for _, p := range ps {
		for m, g := range p {
			out[m] = g
		}
	}
	return out
}

// Any is every grade.
var Any = Grades

// openMethod needs no identity: health must answer probes that hold none,
// and says nothing but whether the server serves. (In production a
// certificate, when given, is still checked against the CA at the
// handshake.)
func openMethod(method string) bool {
	return strings.HasPrefix(method, "/grpc.health.v1.Health/")
}

// describesTheAPI is server reflection: any identity may read the API's
// shape (grpcurl needs it), but a peer with none is told nothing beyond
// health (docs/security.md).
func describesTheAPI(method string) bool {
	return strings.HasPrefix(method, "/grpc.reflection.")
}

// Guard authenticates every call and checks the policy.
type Guard struct {
	Auth   Authenticator
	Policy Policy
}

// admit returns ctx carrying the caller's identity, or the refusal.
func (g Guard) admit(ctx context.Context, method string) (context.Context, error) {
	if openMethod(method) {
		return ctx, nil
	}
	id, err := g.Auth.Authenticate(ctx)
	if err != nil {
		return nil, err
	}
	if describesTheAPI(method) {
		return NewContext(ctx, id), nil
	}
	grades, ok := g.Policy[method]
	if !ok {
		return nil, status.Errorf(codes.PermissionDenied, "%s is not open to any caller", shortMethod(method))
	}
	if !slices.Contains(grades, id.Grade) {
		return nil, status.Errorf(codes.PermissionDenied, "%q is %s and may not call %s", id.Name, id.Grade.Article(), shortMethod(method))
	}
	return NewContext(ctx, id), nil
}

// shortMethod turns "/pkg.Service/Method" into "Service.Method".
func shortMethod(full string) string {
	full = strings.TrimPrefix(full, "/")
	svc, m, _ := strings.Cut(full, "/")
	if i := strings.LastIndexByte(svc, '.'); i >= 0 {
		svc = svc[i+1:]
	}
	return svc + "." + m
}

// Unary is the guard as a unary server interceptor.
func (g Guard) Unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	ctx, err := g.admit(ctx, info.FullMethod)
	if err != nil {
		return nil, err
	}
	return h(ctx, req)
}

// Stream is the guard as a stream server interceptor.
func (g Guard) Stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	ctx, err := g.admit(ss.Context(), info.FullMethod)
	if err != nil {
		return err
	}
	return h(srv, &identified{ServerStream: ss, ctx: ctx})
}

type identified struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *identified) Context() context.Context { return s.ctx }

// Caller returns the identity of the caller of the RPC in ctx, which the
// guard put there. Handlers behind the guard always have one; reaching here
// without one is a wiring bug, refused (UNAUTHENTICATED) rather than
// defaulted.
func Caller(ctx context.Context) (Identity, error) {
	id, ok := FromContext(ctx)
	if !ok {
		return Identity{}, status.Error(codes.Unauthenticated, "no identity on this call")
	}
	return id, nil
}
