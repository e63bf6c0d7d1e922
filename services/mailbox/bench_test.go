package mailbox_test

import (
	"runtime"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// BenchmarkCallRoundTrip is a driver's Call ↔ a host on a Follow stream
// that answers at once, over loopback gRPC in one process. `make bench`
// measures the same across processes against an echo floor.
func BenchmarkCallRoundTrip(b *testing.B) {
	callRoundTrip(b, newSuite(b))
}

func callRoundTrip(b *testing.B, s *suite) {
	defer answering(b, s)()
	b.ResetTimer()
	for b.Loop() {
		res, err := s.mb.Call(driver, &mailboxv1.CallRequest{Client: "laptop", Tool: "echo", Input: `{"n":1}`})
		if err != nil || res.Capture == nil {
			b.Fatal(res, err)
		}
	}
}

// BenchmarkCall16 is the same round trip with 16 callers at once on the
// suite's store, as the bench's grpc_call_cpu_ms_per_call measures it:
// profile it (-cpuprofile, -memprofile) to see what a routed call costs.
func BenchmarkCall16(b *testing.B) {
	s := newSuite(b)
	defer answering(b, s)()
	b.SetParallelism(16 / runtime.GOMAXPROCS(0))
	b.ReportAllocs()
	b.ResetTimer()
	cpu := testkit.ProcessCPU(b)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			res, err := s.mb.Call(driver, &mailboxv1.CallRequest{Client: "laptop", Tool: "echo", Input: `{"n":1}`})
			if err != nil || res.Capture == nil {
				b.Error(res, err)
				return
			}
		}
	})
	b.ReportMetric(float64((testkit.ProcessCPU(b)-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
}

// answering follows "laptop", a host whose one tool echo answers each
// invocation at once with its input, until the returned stop is called.
func answering(b *testing.B, s *suite) (stop func()) {
	s.advertise(b, "laptop", "echo")
	stream, stop := s.follow(b, "laptop")
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
	return stop
}

// BenchmarkInvokeCapture is a durable Invoke then a Capture that waits for
// the answer, as the bench's embedded_invoke_capture_round_trip measures it
// across processes.
func BenchmarkInvokeCapture(b *testing.B) {
	s := newSuite(b)
	defer answering(b, s)()
	b.ResetTimer()
	for b.Loop() {
		res, err := s.mb.Invoke(driver, &mailboxv1.InvokeRequest{Client: "laptop", Tool: "echo", Input: `{"n":1}`})
		if err != nil {
			b.Fatal(err)
		}
		c, err := s.mb.Capture(driver, &mailboxv1.CaptureRequest{Invocation: res.GetInvocation(), Wait: durationpb.New(time.Minute)})
		if err != nil || c.GetCapture() == nil {
			b.Fatal(c, err)
		}
	}
}
