package rest

import (
	"context"

	"google.golang.org/grpc"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/mailboxcall"
)

// recoveringMailbox is the mailbox client behind the REST routes. Its Call
// (POST /v1/call) outlives a mailbox replica that dies mid-call: the
// invocation is stored in NATS and its host goes on with it, so the call
// collects the capture by the handle the Call's header named, through a
// replica that is ready (kit/mailboxcall), rather than answering 503 for a
// tool that ran.
type recoveringMailbox struct {
	mailboxv1.MailboxServiceClient
}

func (m recoveringMailbox) Call(ctx context.Context, req *mailboxv1.CallRequest, opts ...grpc.CallOption) (*mailboxv1.CallResponse, error) {
	return mailboxcall.Call(ctx, m.MailboxServiceClient, req, nil, opts...)
}
