package upstream

import (
	"context"
	"encoding/json"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/bridge/internal/results"
)

// latencies records each operation's time and reports the median and the
// 99th percentile beside ns/op, which is a mean.
type latencies []time.Duration

func (l latencies) report(b *testing.B) {
	if len(l) == 0 {
		return
	}
	slices.Sort(l)
	b.ReportMetric(float64(l[len(l)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(l[len(l)*99/100].Nanoseconds()), "p99-ns")
}

// BenchmarkCallDirectSDK is the baseline: test_simple_text called with the
// SDK alone over stdio.
func BenchmarkCallDirectSDK(b *testing.B) {
	bin := testkit.Tool(b, "everything-server")
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "v1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: exec.Command(bin)}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	ctx := context.Background()
	lat := make(latencies, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_simple_text", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	lat.report(b)
}

// BenchmarkCallUpstream is the same call made the way the bridge makes it:
// through the upstream session (arguments as JSON text, a progress token,
// the log level) and mapped to a capture.
func BenchmarkCallUpstream(b *testing.B) {
	bin := testkit.Tool(b, "everything-server")
	s, err := Open(context.Background(), stdioConfig(bin), Options{Client: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	args := json.RawMessage(`{}`)
	lat := make(latencies, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		res, err := s.Call(ctx, "test_simple_text", args, nil, "inv-bench", nil)
		if err != nil {
			b.Fatal(err)
		}
		if c := results.FromResult(res, 0); c.GetExitCode() != 0 {
			b.Fatal(c)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	lat.report(b)
}
