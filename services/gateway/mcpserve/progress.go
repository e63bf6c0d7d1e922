package mcpserve

import (
	"context"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
)

// progressWait is how long one Status read of the relay waits for a newer
// note. The mailbox answers at once when a note or the answer arrives, so
// this bounds only the quiet stretches (the mailbox allows up to 60 s).
const progressWait = 30 * time.Second

// relayProgress sends the client's progressToken a notifications/progress
// for each note the host reports on the call's invocation (the mailbox's
// Status, read as a long poll with `after`), from the moment the mailbox
// names the handle until the call is answered or stop is called. stop
// returns once nothing more will be sent, so no notification follows the
// call's result.
//
// A Status read that finds no invocation before the first that does is
// asked again: the handle comes before the post. Any other failed read
// ends the relay without a word: progress is a
// courtesy, and the call's own answer says what happened to it.
//
// as is the handler's context with the caller's identity: the Status reads
// are the caller's, and the notifications belong to the handler's request
// (the SDK sends them on that request's stream).
func (m *Mirror) relayProgress(as context.Context, session *mcp.ServerSession, token any, call *running) (stop func()) {
	ctx, cancel := context.WithCancel(as)
	var wg sync.WaitGroup
	wg.Go(func() {
		id := call.handle()
		if id == "" {
			return
		}
		var after int64
		for read := false; ctx.Err() == nil; {
			st, err := m.mailbox.Status(ctx, &mailboxv1.StatusRequest{
				Invocation: id, After: after, Wait: durationpb.New(progressWait)})
			if !read && status.Code(err) == codes.NotFound {
				// The mailbox names the handle before it stores the post
				// (call.go): ask again until the post is there or the call
				// has ended (stop).
				select {
				case <-ctx.Done():
				case <-time.After(cancelRetry):
				}
				continue
			}
			if err != nil {
				return
			}
			read = true
			for _, n := range st.GetProgress() {
				after = n.GetSeq()
				p := &mcp.ProgressNotificationParams{ProgressToken: token, Progress: n.GetProgress(), Message: n.GetMessage()}
				if n.Total != nil {
					p.Total = n.GetTotal()
				}
				if session.NotifyProgress(ctx, p) != nil {
					return
				}
			}
			if st.GetCapture() != nil {
				return
			}
		}
	})
	return func() { cancel(); wg.Wait() }
}
