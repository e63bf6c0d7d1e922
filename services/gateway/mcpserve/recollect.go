package mcpserve

import (
	"context"

	"github.com/switchboard-run/switchboard/kit/suite/mailboxcall"
)

// recollect collects, in the background, the capture of invocation id
// whose Call broke with lost (its mailbox replica died or restarted) under
// ctx, the call's deadline (kit/suite/mailboxcall): the invocation is stored in
// NATS and its host goes on with it or gets it again, so the client gets
// the tool's answer rather than the broken connection. The result comes on
// the channel returned, shaped as the Call's reply would be.
func (m *Mirror) recollect(ctx context.Context, id string, lost error) <-chan callResult {
	m.log.Info("the connection to the mailbox broke during a tools/call; collecting its capture by its handle",
		"invocation", id, "err", lost)
	done := make(chan callResult, 1)
	go func() {
		res, err := mailboxcall.Recollect(ctx, m.mailbox.MailboxServiceClient, id, lost)
		done <- callResult{res: res, err: err}
	}()
	return done
}
