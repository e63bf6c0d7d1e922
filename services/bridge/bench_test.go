package bridge

import (
	"context"
	"slices"
	"testing"
	"time"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// BenchmarkCallThroughTheSuite is test_simple_text called the whole way:
// a driver's mailbox Call → the bridge's Follow stream → the conformance
// server over stdio → Complete → the driver's capture, all on one loopback
// gRPC listener (compare internal/upstream's BenchmarkCallDirectSDK).
func BenchmarkCallThroughTheSuite(b *testing.B) {
	s := newSuite(b, timing{})
	s.mount(b, "conf", stdioServer(testkit.Tool(b, "everything-server")))
	benchCalls(b, s, &mailboxv1.CallRequest{Client: "conf", Tool: "test_simple_text", Input: `{}`})
}

// BenchmarkPluginCallThroughTheSuite is the same path to the example
// notebook, a plugin backend over JSON lines, which takes one call at a
// time.
func BenchmarkPluginCallThroughTheSuite(b *testing.B) {
	s := newSuite(b, timing{})
	s.mount(b, "notes", notebook(b))
	benchCalls(b, s, &mailboxv1.CallRequest{Client: "notes", Tool: "list", Input: `{}`})
}

// benchCalls makes req one call after another and reports the latency's
// median and 99th percentile.
func benchCalls(b *testing.B, s *suite, req *mailboxv1.CallRequest) {
	ctx, cancel := context.WithTimeout(driver, time.Hour)
	defer cancel()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		res, err := s.mb.Call(ctx, req)
		if err != nil || res.GetCapture().GetExitCode() != 0 {
			b.Fatal(err, res)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
		b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
	}
}
