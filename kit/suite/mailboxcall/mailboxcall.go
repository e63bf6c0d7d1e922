// Package mailboxcall is what a driver of the mailbox's Call needs when
// its connection to the mailbox replica breaks mid-call. The Call names
// its handle in a response header before it posts (contract.InvocationHeader), and
// the invocation lives in NATS: a broken connection lost the reply, not
// the call. Recollect then collects the capture by the handle through
// whichever replica is ready. An error the mailbox itself answered after
// naming the handle (its post refused, NATS out of reach) carries
// contract.RefusedTrailer, and is the caller's answer as it stands.
package mailboxcall

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/lib/retry"
	"github.com/switchboard-run/switchboard/kit/suite/contract"
)

// maxCaptureWait is the longest wait one Capture may ask for.
const maxCaptureWait = 60 * time.Second

// backoff spaces the tries of a collection that found no replica ready
// (it waited for one) or one that cannot reach NATS meanwhile.
var backoff = retry.Policy{Base: 50 * time.Millisecond, Max: 2 * time.Second, Multiplier: 2, Jitter: 0.2}

// Handle returns the handle a Call's response header names, or "".
func Handle(header metadata.MD) string {
	if v := header.Get(contract.InvocationHeader); len(v) == 1 {
		return v[0]
	}
	return ""
}

// Broken reports whether a Call that failed with err, its trailer
// trailer, ended because its connection to the mailbox broke.
func Broken(err error, trailer metadata.MD) bool {
	return status.Code(err) == codes.Unavailable && len(trailer.Get(contract.RefusedTrailer)) == 0
}

// Call makes mb's Call of req and, should its connection to the mailbox
// break after the Call named its handle, collects the capture by that
// handle (Recollect); broke, when set, is told so first. It answers as
// Call does: the capture, or the handle alone when the time ran out first.
func Call(ctx context.Context, mb mailboxv1.MailboxServiceClient, req *mailboxv1.CallRequest, broke func(id string, lost error),
	opts ...grpc.CallOption) (*mailboxv1.CallResponse, error) {
	var header, trailer metadata.MD
	res, err := mb.Call(ctx, req, append(opts, grpc.Header(&header), grpc.Trailer(&trailer))...)
	return settle(ctx, mb, res, err, Handle(header), trailer, broke)
}

// settle is a Call's answer: as it came, or collected by its handle id when
// its connection broke after naming it.
func settle(ctx context.Context, mb mailboxv1.MailboxServiceClient, res *mailboxv1.CallResponse, err error, id string,
	trailer metadata.MD, broke func(id string, lost error)) (*mailboxv1.CallResponse, error) {
	if err == nil || id == "" || !Broken(err, trailer) {
		return res, err
	}
	if broke != nil {
		broke(id, err)
	}
	res, err = Recollect(ctx, mb, id, err)
	if status.Code(err) == codes.DeadlineExceeded && res != nil {
		return res, nil
	}
	return res, err
}

// CallNamed is Call over cc that also tells named the handle the moment
// the Call's header names it, before the call is answered: a front that
// passes it on at once (REST's 103 Early Hints) lets a client whose
// connection breaks collect by it. A Call refused unposted (contract.NotPosted) is
// made again within ctx, so named may be told a second, newer handle.
func CallNamed(ctx context.Context, cc grpc.ClientConnInterface, req *mailboxv1.CallRequest, named func(id string),
	broke func(id string, lost error), opts ...grpc.CallOption) (*mailboxv1.CallResponse, error) {
	var header, trailer metadata.MD
	res, err := InvokeNamed(ctx, cc, req, named, append(opts, grpc.Header(&header), grpc.Trailer(&trailer))...)
	return settle(ctx, mailboxv1.NewMailboxServiceClient(cc), res, err, Handle(header), trailer, broke)
}

// InvokeNamed is CallNamed without the collection after a broken
// connection: the Call's reply as it came (its header and trailer through
// opts, those of the last try).
func InvokeNamed(ctx context.Context, cc grpc.ClientConnInterface, req *mailboxv1.CallRequest, named func(id string),
	opts ...grpc.CallOption) (*mailboxv1.CallResponse, error) {
	var res *mailboxv1.CallResponse
	err := notPosted.Do(ctx, func(ctx context.Context) error {
		var err error
		res, err = invokeNamed(ctx, cc, req, named, opts...)
		return err
	})
	return res, err
}

// notPosted makes again, within its context, an Invoke or Call a replica
// refused before posting it (one shutting down): the balancer's next pick
// is another replica, so the first try comes soon.
var notPosted = retry.Loop{Policy: retry.Policy{Base: 10 * time.Millisecond, Max: time.Second, Multiplier: 2, Jitter: 0.2},
	Retryable: contract.NotPosted}

// invokeNamed makes the unary Call as a stream: a unary call's header is
// read only once it is answered, a stream's as soon as it arrives.
func invokeNamed(ctx context.Context, cc grpc.ClientConnInterface, req *mailboxv1.CallRequest, named func(id string),
	opts ...grpc.CallOption) (*mailboxv1.CallResponse, error) {
	cs, err := cc.NewStream(ctx, &grpc.StreamDesc{StreamName: "Call"}, mailboxv1.MailboxService_Call_FullMethodName, opts...)
	if err != nil {
		return nil, err
	}
	if err := cs.SendMsg(req); err != nil && !errors.Is(err, io.EOF) { // EOF: RecvMsg has the status
		return nil, err
	}
	if header, err := cs.Header(); err == nil && named != nil {
		if id := Handle(header); id != "" {
			named(id)
		}
	}
	res := new(mailboxv1.CallResponse)
	if err := cs.RecvMsg(res); err != nil {
		return nil, err
	}
	return res, nil
}

// RetryingNotPosted is cc whose unary Invoke and Call of the mailbox are
// made again, within their context, when a replica refused them unposted
// (contract.NotPosted). Streams pass through: CallNamed retries its own.
func RetryingNotPosted(cc grpc.ClientConnInterface) grpc.ClientConnInterface { return retrying{cc} }

type retrying struct{ grpc.ClientConnInterface }

func (r retrying) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	if method != mailboxv1.MailboxService_Invoke_FullMethodName && method != mailboxv1.MailboxService_Call_FullMethodName {
		return r.ClientConnInterface.Invoke(ctx, method, args, reply, opts...)
	}
	return notPosted.Do(ctx, func(ctx context.Context) error {
		return r.ClientConnInterface.Invoke(ctx, method, args, reply, opts...)
	})
}

// Recollect collects the capture of invocation id, whose Call broke with
// lost, within ctx (Await); an error other than the deadline's names what
// broke and why collecting failed (NotFound: the dead replica had handed
// the capture over already).
func Recollect(ctx context.Context, mb mailboxv1.MailboxServiceClient, id string, lost error) (*mailboxv1.CallResponse, error) {
	res, err := Await(ctx, mb, id)
	if err != nil && status.Code(err) != codes.DeadlineExceeded {
		return nil, status.Errorf(status.Code(err), "the connection to the mailbox broke while it ran (%s), and collecting its capture then failed: %s",
			status.Convert(lost).Message(), status.Convert(err).Message())
	}
	return res, err
}

// Await collects the capture of invocation id within ctx, as a Call would
// have: each Capture waits up to a minute for the answer and a ready
// replica, under a retry key of its own. It returns the capture, or the
// handle with DeadlineExceeded, or the mailbox's refusal.
func Await(ctx context.Context, mb mailboxv1.MailboxServiceClient, id string) (*mailboxv1.CallResponse, error) {
	key := "recollect-" + rand.Text()
	unavailable := retry.Loop{Policy: backoff, Retryable: func(err error) bool { return status.Code(err) == codes.Unavailable }}
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
			res, err = mb.Capture(ctx, &mailboxv1.CaptureRequest{Invocation: id, Wait: durationpb.New(wait), RetryKey: &key},
				grpc.WaitForReady(true))
			return err
		})
		switch {
		case err == nil && res.GetCapture() != nil:
			return &mailboxv1.CallResponse{Invocation: id, Capture: res.GetCapture()}, nil
		case ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded):
			return &mailboxv1.CallResponse{Invocation: id}, status.Error(codes.DeadlineExceeded, "the call's time ran out")
		case err == nil:
			continue // still running: wait again
		}
		return nil, err
	}
}
