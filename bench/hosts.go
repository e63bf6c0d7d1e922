package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
	"github.com/switchboard-run/switchboard/kit/suite/follower"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
)

// The bench's tool hosts answer at once, so a round trip measures the
// suite and not a tool.

var driver = identity.Identity{Name: "bench-driver", Grade: identity.Driver}

func as(ctx context.Context, name string, grade identity.Grade) context.Context {
	return identity.As(ctx, identity.Identity{Name: name, Grade: grade})
}

// advertiseEcho gives client the one tool the bench calls.
func advertiseEcho(ctx context.Context, reg registryv1.RegistryServiceClient, client string) error {
	_, err := reg.Advertise(as(ctx, client, identity.Host), &registryv1.AdvertiseRequest{
		Tools:   []*registryv1.Tool{{Name: "echo", Description: "answers its input", InputSchema: `{"type":"object"}`}},
		Session: proto.String("bench-" + client),
	})
	return err
}

// How a bench host answers what it reads.
type answering int

const (
	parkedHost   answering = iota // it reads and answers nothing
	onServe                       // on its Serve stream, as the suite's hosts do
	withComplete                  // with a unary Complete each, as hosts did before Serve
)

// follow holds client's read until ctx ends, answering every invocation
// with its input as stdout (unless parked). It returns once the read is
// held.
func follow(ctx context.Context, mb mailboxv1.MailboxServiceClient, client string, how answering) error {
	hctx := as(ctx, client, identity.Host)
	session := proto.String("bench-" + client)
	if how == withComplete {
		stream, err := mb.Follow(hctx, &mailboxv1.FollowRequest{Session: session})
		if err != nil {
			return err
		}
		return serveEvents(client, stream.Recv, func(inv *mailboxv1.Invocation) {
			go func() {
				_, _ = mb.Complete(hctx, &mailboxv1.CompleteRequest{Invocation: inv.GetInvocation(),
					Capture: capture.New(inv.GetInput(), "", 0)})
			}()
		})
	}
	stream, err := mb.Serve(hctx)
	if err != nil {
		return err
	}
	if err := stream.Send(&mailboxv1.ServeRequest{Message: &mailboxv1.ServeRequest_Open{Open: &mailboxv1.FollowRequest{Session: session}}}); err != nil {
		return err
	}
	recv := func() (*mailboxv1.FollowResponse, error) {
		for {
			ev, err := stream.Recv()
			if err != nil {
				return nil, err
			}
			if fe := follower.FollowEvent(ev); fe != nil { // receipts need nothing
				return fe, nil
			}
		}
	}
	var sending sync.Mutex // a stream takes one sender at a time
	return serveEvents(client, recv, func(inv *mailboxv1.Invocation) {
		if how == parkedHost {
			return
		}
		go func() {
			sending.Lock()
			defer sending.Unlock()
			_ = stream.Send(&mailboxv1.ServeRequest{Message: &mailboxv1.ServeRequest_Complete{Complete: &mailboxv1.CompleteRequest{
				Invocation: inv.GetInvocation(), Capture: capture.New(inv.GetInput(), "", 0)}}})
		}()
	})
}

// serveEvents checks a read's first event is opened, then hands each
// invocation to run on a goroutine of its own until the read ends.
func serveEvents(client string, recv func() (*mailboxv1.FollowResponse, error), run func(*mailboxv1.Invocation)) error {
	ev, err := recv()
	if err != nil || ev.GetOpened() == nil {
		return fmt.Errorf("follow %s: first event %v, %v", client, ev, err)
	}
	go func() {
		for {
			ev, err := recv()
			if err != nil {
				return
			}
			if inv := ev.GetInvocation(); inv != nil {
				run(inv)
			}
		}
	}()
	return nil
}

// invokeCapture is one durable round trip: an Invoke, then a Capture that
// waits for the answer.
func invokeCapture(ctx context.Context, mb mailboxv1.MailboxServiceClient, client, input string) error {
	dctx := identity.As(ctx, driver)
	res, err := mb.Invoke(dctx, &mailboxv1.InvokeRequest{Client: client, Tool: "echo", Input: input})
	if err != nil {
		return err
	}
	c, err := mb.Capture(dctx, &mailboxv1.CaptureRequest{Invocation: res.GetInvocation(), Wait: durationpb.New(time.Minute)})
	if err != nil {
		return err
	}
	if c.GetCapture().GetStdout() != input {
		return fmt.Errorf("invoke then capture: stdout %q, want the input back", c.GetCapture().GetStdout())
	}
	return nil
}

// call is one driver round trip through the mailbox.
func call(ctx context.Context, mb mailboxv1.MailboxServiceClient, client, input string) error {
	res, err := mb.Call(identity.As(ctx, driver), &mailboxv1.CallRequest{Client: client, Tool: "echo", Input: input})
	if err != nil {
		return err
	}
	if res.GetCapture().GetStdout() != input {
		return fmt.Errorf("call to %s: capture %v, want stdout %s", client, res.GetCapture(), input)
	}
	return nil
}
