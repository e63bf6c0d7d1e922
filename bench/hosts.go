package main

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/capture"
	"github.com/switchboard-run/switchboard/kit/identity"
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

// follow holds client's Follow stream until ctx ends. With answer set, it
// completes every invocation with its input as stdout; otherwise it only
// drains the stream (a parked host). It returns once the read is held.
func follow(ctx context.Context, mb mailboxv1.MailboxServiceClient, client string, answer bool) error {
	hctx := as(ctx, client, identity.Host)
	stream, err := mb.Follow(hctx, &mailboxv1.FollowRequest{Session: proto.String("bench-" + client)})
	if err != nil {
		return err
	}
	ev, err := stream.Recv()
	if err != nil || ev.GetOpened() == nil {
		return fmt.Errorf("follow %s: first event %v, %v", client, ev, err)
	}
	go func() {
		for {
			ev, err := stream.Recv()
			if err != nil {
				return
			}
			inv := ev.GetInvocation()
			if inv == nil || !answer {
				continue
			}
			go func() {
				_, _ = mb.Complete(hctx, &mailboxv1.CompleteRequest{Invocation: inv.GetInvocation(),
					Capture: capture.New(inv.GetInput(), "", 0)})
			}()
		}
	}()
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
