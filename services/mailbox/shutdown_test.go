package mailbox_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/mailboxcall"
)

// A Call waiting when its replica shuts down (the drain SIGTERM starts) is
// answered UNAVAILABLE naming its handle, at once, not with the handle
// alone as if its time had run out. The drain writes what the replica held
// in memory to the records first, so the answer is shaped as a broken
// connection's (no refused trailer) and its driver collects the capture
// elsewhere (kit/suite/mailboxcall).
func TestACallWaitingAsItsReplicaShutsDown(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		broken bool
		says   string
	}{
		{"nats", true, "collect its capture through another replica"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := newSuite(t)
			s.advertise(t, "laptop", "echo")
			stream, cancel := s.follow(t, "laptop")
			defer cancel()
			ctx, cancelCall := context.WithTimeout(driver, time.Minute)
			defer cancelCall()
			var header, trailer metadata.MD
			answered := make(chan error, 1)
			go func() {
				_, err := s.mb.Call(ctx, &mailboxv1.CallRequest{Client: "laptop", Tool: "echo", Input: "{}"},
					grpc.Header(&header), grpc.Trailer(&trailer))
				answered <- err
			}()
			inv := next(t, stream).GetInvocation() // posted: the Call waits for its answer
			if inv == nil {
				t.Fatal("the host was handed no invocation")
			}
			s.stop()
			err := <-answered
			id := inv.GetInvocation()
			if mailboxcall.Handle(header) != id {
				t.Errorf("the Call's header named %q; want %s", mailboxcall.Handle(header), id)
			}
			if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), id) || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("the Call answered %v; want UNAVAILABLE naming %s and saying %q", err, id, c.says)
			}
			if got := mailboxcall.Broken(err, trailer); got != c.broken {
				t.Errorf("answered as a broken connection: %v; want %v (trailer %v)", got, c.broken, trailer)
			}
		})
	}
}
