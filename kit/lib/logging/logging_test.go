package logging_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/switchboard-run/switchboard/kit/lib/logging"
)

// A line logged inside a span names the trace and the span; one outside
// names neither.
func TestLinesCarryTheirTrace(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log, err := logging.New(&buf, "info", "json")
	if err != nil {
		t.Fatal(err)
	}
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ctx := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid}))
	log.With("service", "gateway").InfoContext(ctx, "http request")
	log.InfoContext(context.Background(), "no span")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if !strings.Contains(lines[0], `"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"00f067aa0ba902b7"`) ||
		!strings.Contains(lines[0], `"service":"gateway"`) {
		t.Errorf("a line in a span: %s", lines[0])
	}
	if strings.Contains(lines[1], "trace_id") {
		t.Errorf("a line outside any span: %s", lines[1])
	}
}
