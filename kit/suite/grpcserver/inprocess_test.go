package grpcserver_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/switchboard-run/switchboard/kit/lib/logging"
	"github.com/switchboard-run/switchboard/kit/suite/grpcserver"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
)

// A call in process meets the same guard as one over the network: the same
// identities answered, the same refusals in the same words, panics
// recovered, and the message bound kept.
func TestInProcessRefusesAsTheNetworkDoes(t *testing.T) {
	t.Parallel()
	const secret = "the-run-secret-0123456789abcdef"
	srv := grpcserver.New(grpcserver.Options{Logger: logging.Discard(),
		Guard: identity.Guard{Auth: identity.Authenticator{Dev: true, DevSecret: secret},
			Policy: identity.Policy{whoamiMethod: {identity.Admin, identity.Driver}}}})
	srv.RegisterService(&whoamiDesc, struct{}{})
	network := dial(t, serveServer(t, srv, true), nil)
	creds := grpc.PerRPCCredentials(identity.DevSecret(secret))
	ends := map[string]grpc.ClientConnInterface{"network": network, "in process": srv.InProcess()}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	for _, c := range []struct {
		name     string
		ctx      context.Context
		ask      string
		opts     []grpc.CallOption
		want     string
		code     codes.Code
		sentence string
	}{
		{name: "an admin is answered", ctx: identity.As(ctx, identity.Identity{Name: "me", Grade: identity.Admin}), opts: []grpc.CallOption{creds}, want: "me (admin)"},
		{name: "no identity", ctx: ctx, opts: []grpc.CallOption{creds}, code: codes.Unauthenticated, sentence: "switchboard-identity"},
		{name: "no secret", ctx: identity.As(ctx, identity.Identity{Name: "me", Grade: identity.Admin}), code: codes.Unauthenticated, sentence: "switchboard-dev-secret"},
		{name: "a host may not", ctx: identity.As(ctx, identity.Identity{Name: "laptop", Grade: identity.Host}), opts: []grpc.CallOption{creds},
			code: codes.PermissionDenied, sentence: `"laptop" is a host and may not call Whoami.Who`},
		{name: "a panic", ctx: identity.As(ctx, identity.Identity{Name: "me", Grade: identity.Admin}), ask: "panic", opts: []grpc.CallOption{creds},
			code: codes.Internal, sentence: "the handler panicked"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := map[string]string{}
			for end, cc := range ends {
				out := new(wrapperspb.StringValue)
				err := cc.Invoke(c.ctx, whoamiMethod, wrapperspb.String(c.ask), out, c.opts...)
				if status.Code(err) != c.code || out.GetValue() != c.want || !strings.Contains(status.Convert(err).Message(), c.sentence) {
					t.Errorf("%s: %q, %v; want %q, %v naming %q", end, out.GetValue(), err, c.want, c.code, c.sentence)
				}
				got[end] = status.Convert(err).Message()
			}
			if got["network"] != got["in process"] {
				t.Errorf("the refusals differ:\nnetwork:    %s\nin process: %s", got["network"], got["in process"])
			}
		})
	}

	big := wrapperspb.String(strings.Repeat("x", grpcserver.MaxMessageBytes+1))
	for end, cc := range ends {
		err := cc.Invoke(identity.As(ctx, identity.Identity{Name: "me", Grade: identity.Admin}), whoamiMethod, big, new(wrapperspb.StringValue), creds)
		if status.Code(err) != codes.ResourceExhausted {
			t.Errorf("%s: a message past the bound: %v, want RESOURCE_EXHAUSTED", end, err)
		}
	}
}

// A unary method called as a stream (how mailboxcall reads a Call's header
// before its reply) is served in process too, through the unary guard.
func TestInProcessServesAUnaryMethodAsAStream(t *testing.T) {
	t.Parallel()
	srv := grpcserver.New(grpcserver.Options{Logger: logging.Discard(),
		Guard: identity.Guard{Auth: identity.Authenticator{Dev: true}, Policy: identity.Policy{whoamiMethod: {identity.Admin}}}})
	srv.RegisterService(&whoamiDesc, struct{}{})
	cc := srv.InProcess()
	serveServer(t, srv, true) // in-process calls wait for it
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	asStream := func(ctx context.Context) (string, metadata.MD, error) {
		cs, err := cc.NewStream(ctx, &grpc.StreamDesc{StreamName: "Who"}, whoamiMethod)
		if err != nil {
			return "", nil, err
		}
		if err := cs.SendMsg(wrapperspb.String("")); err != nil {
			return "", nil, err
		}
		out := new(wrapperspb.StringValue)
		err = cs.RecvMsg(out)
		return out.GetValue(), cs.Trailer(), err
	}
	if got, _, err := asStream(identity.As(ctx, identity.Identity{Name: "me", Grade: identity.Admin})); err != nil || got != "me (admin)" {
		t.Fatalf("as a stream: %q, %v; want me (admin)", got, err)
	}
	if _, _, err := asStream(identity.As(ctx, identity.Identity{Name: "laptop", Grade: identity.Host})); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("a host as a stream: %v, want PERMISSION_DENIED", err)
	}
}

// A call in process made before the server serves waits for it, as a
// network call waits for the listener (services register until then).
func TestInProcessCallsWaitForServe(t *testing.T) {
	t.Parallel()
	srv := grpcserver.New(grpcserver.Options{Logger: logging.Discard(),
		Guard: identity.Guard{Auth: identity.Authenticator{Dev: true}, Policy: identity.Policy{whoamiMethod: {identity.Admin}}}})
	cc := srv.InProcess()
	ctx, cancel := context.WithTimeout(identity.As(context.Background(), identity.Identity{Name: "me", Grade: identity.Admin}), 10*time.Second)
	defer cancel()
	early, stop := context.WithCancel(ctx)
	stop()
	if _, err := who(early, cc, ""); status.Code(err) != codes.Canceled {
		t.Fatalf("a call whose context ends before the server serves: %v, want CANCELLED", err)
	}
	answered := make(chan error, 1)
	go func() {
		got, err := who(ctx, cc, "")
		if err == nil && got != "me (admin)" {
			err = fmt.Errorf("answered %q", got)
		}
		answered <- err
	}()
	srv.RegisterService(&whoamiDesc, struct{}{}) // registered while the call waits
	serveServer(t, srv, true)
	if err := <-answered; err != nil {
		t.Fatalf("the call that waited for Serve: %v", err)
	}
}

// A unary handler's header reaches a caller that called it as a stream
// before the reply does (mailboxcall names a Call's handle so).
func TestInProcessSendsAHeaderBeforeTheReply(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	desc := grpc.ServiceDesc{ServiceName: "test.Slow", HandlerType: (*any)(nil), Methods: []grpc.MethodDesc{{
		MethodName: "Wait",
		Handler: func(_ any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
			in := new(wrapperspb.StringValue)
			if err := dec(in); err != nil {
				return nil, err
			}
			h := func(ctx context.Context, _ any) (any, error) {
				if err := grpc.SendHeader(ctx, metadata.Pairs("handle", "h-1")); err != nil {
					return nil, err
				}
				<-release
				return wrapperspb.String("done"), nil
			}
			return icpt(ctx, in, &grpc.UnaryServerInfo{FullMethod: "/test.Slow/Wait"}, h)
		},
	}}}
	srv := grpcserver.New(grpcserver.Options{Logger: logging.Discard(),
		Guard: identity.Guard{Auth: identity.Authenticator{Dev: true}, Policy: identity.Policy{"/test.Slow/Wait": {identity.Admin}}}})
	srv.RegisterService(&desc, struct{}{})
	serveServer(t, srv, true)
	ctx, cancel := context.WithTimeout(identity.As(context.Background(), identity.Identity{Name: "me", Grade: identity.Admin}), 10*time.Second)
	defer cancel()
	cs, err := srv.InProcess().NewStream(ctx, &grpc.StreamDesc{StreamName: "Wait"}, "/test.Slow/Wait")
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.SendMsg(wrapperspb.String("")); err != nil {
		t.Fatal(err)
	}
	header, err := cs.Header() // the handler still waits for release
	if err != nil || !slices.Equal(header.Get("handle"), []string{"h-1"}) {
		t.Fatalf("the header before the reply: %v, %v", header, err)
	}
	close(release)
	out := new(wrapperspb.StringValue)
	if err := cs.RecvMsg(out); err != nil || out.GetValue() != "done" {
		t.Fatalf("the reply: %q, %v", out.GetValue(), err)
	}
}
