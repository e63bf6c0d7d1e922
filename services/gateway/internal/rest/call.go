package rest

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

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
	var header, trailer metadata.MD
	res, err := m.MailboxServiceClient.Call(ctx, req, append(opts, grpc.Header(&header), grpc.Trailer(&trailer))...)
	id := mailboxcall.Handle(header)
	if err == nil || id == "" || !mailboxcall.Broken(err, trailer) {
		return res, err
	}
	res, err = mailboxcall.Recollect(ctx, m.MailboxServiceClient, id, err)
	if status.Code(err) == codes.DeadlineExceeded && res != nil {
		return res, nil // as Call answers when its time runs out: the handle alone
	}
	return res, err
}
