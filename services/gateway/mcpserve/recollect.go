package mcpserve

import (
	"context"
	"crypto/rand"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
)

// A tools/call whose connection to the mailbox replica breaks after the
// Call named its handle (the replica died, or was restarted) has not lost
// its invocation: it is stored in NATS, its host goes on with it or gets
// it again, and its capture lands in its slot. The call then collects the
// capture by its handle, through whichever replica is ready, for the time
// it has left, instead of telling the client that a call which may have
// run failed. The collection names itself with a retry key, so a replica
// that dies while sending the capture back costs nothing either: the next
// try gets the same capture. What this cannot recover is a capture the
// dead replica had already handed to the Call and removed from NATS
// (docs/architecture.md); the Capture then says the invocation is absent.

// maxCaptureWait is the longest wait one Capture may ask for.
const maxCaptureWait = 60 * time.Second

// recollectPause and maxRecollectPause space the tries of a collection
// that a replica refused as unavailable.
const (
	recollectPause    = 50 * time.Millisecond
	maxRecollectPause = 2 * time.Second
)

// connectionLost reports whether a Call ended because its connection to
// the mailbox broke, rather than by the mailbox's own answer.
func connectionLost(err error) bool { return status.Code(err) == codes.Unavailable }

// recollect collects the capture of invocation id under ctx (the call's
// deadline), waiting for a ready mailbox replica between tries; the result
// comes on the channel returned, shaped as the Call's reply would be.
func (m *Mirror) recollect(ctx context.Context, id string, lost error) <-chan callResult {
	m.log.Info("the connection to the mailbox broke during a tools/call; collecting its capture by its handle",
		"invocation", id, "err", lost)
	done := make(chan callResult, 1)
	key := "mcp-" + rand.Text()
	go func() {
		pause := recollectPause
		for {
			wait := maxCaptureWait
			if deadline, ok := ctx.Deadline(); ok {
				wait = min(wait, time.Until(deadline))
			}
			if wait <= 0 {
				done <- callResult{res: &mailboxv1.CallResponse{Invocation: id}, err: status.Error(codes.DeadlineExceeded, "the call's time ran out")}
				return
			}
			res, err := m.mailbox.Capture(ctx, &mailboxv1.CaptureRequest{Invocation: id, Wait: durationpb.New(wait), RetryKey: &key},
				grpc.WaitForReady(true))
			switch {
			case err == nil && res.GetCapture() != nil:
				done <- callResult{res: &mailboxv1.CallResponse{Invocation: id, Capture: res.GetCapture()}}
				return
			case ctx.Err() != nil:
				done <- callResult{res: &mailboxv1.CallResponse{Invocation: id}, err: status.FromContextError(ctx.Err()).Err()}
				return
			case err == nil:
				continue // still running: wait again
			case connectionLost(err):
				// No replica was ready (the call waited for one), or the one
				// asked cannot reach NATS meanwhile: ask again a little later.
				select {
				case <-ctx.Done():
				case <-time.After(pause):
				}
				pause = min(2*pause, maxRecollectPause)
				continue
			}
			done <- callResult{err: status.Errorf(status.Code(err), "the connection to the mailbox broke while it ran (%s), and collecting its capture then failed: %s",
				status.Convert(lost).Message(), status.Convert(err).Message())}
			return
		}
	}()
	return done
}
