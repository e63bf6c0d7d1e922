package scripted

import (
	"context"

	"google.golang.org/grpc"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
)

// Registry answers the token check from OnAuthenticateToken, recording each
// call in Rec.
type Registry struct {
	registryv1.UnimplementedRegistryServiceServer
	Rec Recorder

	OnAuthenticateToken func(identity.Identity, *registryv1.AuthenticateTokenRequest) (*registryv1.AuthenticateTokenResponse, error)
}

// AuthenticateToken answers with OnAuthenticateToken.
func (r *Registry) AuthenticateToken(ctx context.Context, req *registryv1.AuthenticateTokenRequest) (*registryv1.AuthenticateTokenResponse, error) {
	id := r.Rec.record(ctx, "AuthenticateToken", req)
	if r.OnAuthenticateToken == nil {
		return nil, unscripted("AuthenticateToken")
	}
	return r.OnAuthenticateToken(id, req)
}

// Mailbox answers the mailbox's methods the gateway calls from the On*
// functions, recording each call in Rec. OnInvocations gets the call's
// context, so a test can hold the read and see it cancelled.
type Mailbox struct {
	mailboxv1.UnimplementedMailboxServiceServer
	Rec Recorder

	OnInvoke      func(identity.Identity, *mailboxv1.InvokeRequest) (*mailboxv1.InvokeResponse, error)
	OnInvocations func(context.Context, identity.Identity, *mailboxv1.InvocationsRequest) (*mailboxv1.InvocationsResponse, error)
	OnCapture     func(identity.Identity, *mailboxv1.CaptureRequest) (*mailboxv1.CaptureResponse, error)
	OnFollow      func(context.Context, identity.Identity, *mailboxv1.FollowRequest, func(*mailboxv1.FollowResponse) error) error
}

// Invoke answers with OnInvoke.
func (m *Mailbox) Invoke(ctx context.Context, req *mailboxv1.InvokeRequest) (*mailboxv1.InvokeResponse, error) {
	id := m.Rec.record(ctx, "Invoke", req)
	if m.OnInvoke == nil {
		return nil, unscripted("Invoke")
	}
	return m.OnInvoke(id, req)
}

// Invocations answers with OnInvocations.
func (m *Mailbox) Invocations(ctx context.Context, req *mailboxv1.InvocationsRequest) (*mailboxv1.InvocationsResponse, error) {
	id := m.Rec.record(ctx, "Invocations", req)
	if m.OnInvocations == nil {
		return nil, unscripted("Invocations")
	}
	return m.OnInvocations(ctx, id, req)
}

// Capture answers with OnCapture.
func (m *Mailbox) Capture(ctx context.Context, req *mailboxv1.CaptureRequest) (*mailboxv1.CaptureResponse, error) {
	id := m.Rec.record(ctx, "Capture", req)
	if m.OnCapture == nil {
		return nil, unscripted("Capture")
	}
	return m.OnCapture(id, req)
}

// Follow answers with OnFollow, which sends events until it returns.
func (m *Mailbox) Follow(req *mailboxv1.FollowRequest, stream grpc.ServerStreamingServer[mailboxv1.FollowResponse]) error {
	id := m.Rec.record(stream.Context(), "Follow", req)
	if m.OnFollow == nil {
		return unscripted("Follow")
	}
	return m.OnFollow(stream.Context(), id, req, stream.Send)
}
