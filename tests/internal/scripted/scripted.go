// Package scripted serves the registry, mailbox and bridge contracts from
// answers a test scripts, for the few gateway tests (tests/gateway) that need a backend to
// do what the real services never do on cue: hold a read until the test
// releases it, record the metadata a call carried, answer a token check
// with a grade no registry would mint, or speak over a service certificate
// without a registry behind it. They are real gRPC servers on loopback
// ports, built with the kit's server, so the identity guard checks what the
// gateway forwards exactly as a real backend does. The goldens and the
// end-to-end tests run the real services.
package scripted

import (
	"context"
	"crypto/tls"
	"net"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/lib/logging"
	"github.com/switchboard-run/switchboard/kit/suite/grpcserver"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
)

// Call is one call a scripted backend answered.
type Call struct {
	// Method is the RPC's short name ("Invoke").
	Method string
	// Caller is the identity the guard admitted.
	Caller identity.Identity
	// Request is what was asked.
	Request proto.Message
	// Metadata is the incoming metadata as the backend saw it.
	Metadata metadata.MD
}

// Recorder keeps the calls in order.
type Recorder struct {
	mu    sync.Mutex
	calls []Call
}

func (r *Recorder) record(ctx context.Context, method string, req proto.Message) identity.Identity {
	id, _ := identity.FromContext(ctx)
	md, _ := metadata.FromIncomingContext(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, Call{Method: method, Caller: id, Request: req, Metadata: md.Copy()})
	return id
}

// Calls returns the calls so far.
func (r *Recorder) Calls() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Call(nil), r.calls...)
}

// Last returns the last call of method, failing the test if there is none.
func (r *Recorder) Last(t testing.TB, method string) Call {
	t.Helper()
	calls := r.Calls()
	for i := len(calls) - 1; i >= 0; i-- {
		if calls[i].Method == method {
			return calls[i]
		}
	}
	t.Fatalf("no %s call reached the backend (calls: %d)", method, len(calls))
	return Call{}
}

// Options configures Serve.
type Options struct {
	// TLS is the server's TLS config; nil serves plaintext in dev mode.
	TLS *tls.Config
	// Registry and Mailbox answer their services; nil leaves every method
	// unimplemented. The bridge is always unimplemented.
	Registry *Registry
	Mailbox  *Mailbox
}

// Serve starts the backends on a loopback port and returns its address;
// the server stops when the test ends.
func Serve(t testing.TB, opts Options) string {
	t.Helper()
	policy := identity.Policy{}
	for _, sd := range []grpc.ServiceDesc{registryv1.RegistryService_ServiceDesc, mailboxv1.MailboxService_ServiceDesc, bridgev1.BridgeService_ServiceDesc} {
		for _, m := range sd.Methods {
			policy["/"+sd.ServiceName+"/"+m.MethodName] = identity.Any
		}
		for _, s := range sd.Streams {
			policy["/"+sd.ServiceName+"/"+s.StreamName] = identity.Any
		}
	}
	srv := grpcserver.New(grpcserver.Options{
		Logger: logging.Discard(),
		Guard:  identity.Guard{Auth: identity.Authenticator{Dev: opts.TLS == nil}, Policy: policy},
		TLS:    opts.TLS,
	})
	reg, mb := opts.Registry, opts.Mailbox
	if reg == nil {
		reg = &Registry{}
	}
	if mb == nil {
		mb = &Mailbox{}
	}
	registryv1.RegisterRegistryServiceServer(srv, reg)
	mailboxv1.RegisterMailboxServiceServer(srv, mb)
	bridgev1.RegisterBridgeServiceServer(srv, &bridge{})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = srv.Serve(ctx, lis); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return lis.Addr().String()
}

type bridge struct {
	bridgev1.UnimplementedBridgeServiceServer
}

// unscripted is the answer of a method the test did not script.
func unscripted(method string) error {
	return status.Errorf(codes.Unimplemented, "the test scripted no answer for %s", method)
}
