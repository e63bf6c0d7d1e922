package mailbox_test

import (
	"testing"

	"github.com/switchboard-run/switchboard/services/mailbox"
	"github.com/switchboard-run/switchboard/services/mailbox/mailboxtest"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/capture"
)

// BenchmarkCallRoundTrip is a driver's Call ↔ a host on a Follow stream
// that answers at once, over loopback gRPC in one process. `make bench`
// measures the same across processes against an echo floor.
func BenchmarkCallRoundTrip(b *testing.B) {
	for _, kind := range []string{mailbox.StoreNATS, mailbox.StoreMem} {
		b.Run(kind, func(b *testing.B) {
			store := mailboxtest.StoreDefaults
			store.Kind = kind
			callRoundTrip(b, newSuiteOn(b, store))
		})
	}
}

func callRoundTrip(b *testing.B, s *suite) {
	s.advertise(b, "laptop", "echo")
	stream, stop := s.follow(b, "laptop")
	defer stop()
	go func() {
		for {
			ev, err := stream.Recv()
			if err != nil {
				return
			}
			inv := ev.GetInvocation()
			go s.mb.Complete(host("laptop"), &mailboxv1.CompleteRequest{Invocation: inv.GetInvocation(), Capture: capture.New(inv.GetInput(), "", 0)})
		}
	}()
	b.ResetTimer()
	for b.Loop() {
		res, err := s.mb.Call(driver, &mailboxv1.CallRequest{Client: "laptop", Tool: "echo", Input: `{"n":1}`})
		if err != nil || res.Capture == nil {
			b.Fatal(res, err)
		}
	}
}
