package mcpserve

import (
	"context"
	"crypto/rand"
	"errors"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/retry"
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

// recollectRetry spaces the tries of a collection that found no replica
// ready (it waited for one) or one that cannot reach NATS meanwhile.
var recollectRetry = retry.Policy{Base: 50 * time.Millisecond, Max: 2 * time.Second, Multiplier: 2, Jitter: 0.2}

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
	unavailable := retry.Loop{Policy: recollectRetry, Retryable: connectionLost}
	go func() {
		for {
			var res *mailboxv1.CaptureResponse
			err := unavailable.Do(ctx, func(ctx context.Context) error {
				wait := maxCaptureWait
				if deadline, ok := ctx.Deadline(); ok {
					wait = min(wait, time.Until(deadline))
				}
				if wait <= 0 {
					return retry.Stop(context.DeadlineExceeded)
				}
				var err error
				res, err = m.mailbox.Capture(ctx, &mailboxv1.CaptureRequest{Invocation: id, Wait: durationpb.New(wait), RetryKey: &key},
					grpc.WaitForReady(true))
				return err
			})
			switch {
			case err == nil && res.GetCapture() != nil:
				done <- callResult{res: &mailboxv1.CallResponse{Invocation: id, Capture: res.GetCapture()}}
				return
			case ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded):
				done <- callResult{res: &mailboxv1.CallResponse{Invocation: id}, err: status.Error(codes.DeadlineExceeded, "the call's time ran out")}
				return
			case err == nil:
				continue // still running: wait again
			}
			done <- callResult{err: status.Errorf(status.Code(err), "the connection to the mailbox broke while it ran (%s), and collecting its capture then failed: %s",
				status.Convert(lost).Message(), status.Convert(err).Message())}
			return
		}
	}()
	return done
}
