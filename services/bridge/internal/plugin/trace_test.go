package plugin

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// A traced call's request line carries the run's W3C traceparent; an
// untraced one carries none (docs/plugins.md).
func TestTheRequestLineCarriesTheTraceparent(t *testing.T) {
	t.Parallel()
	b, _ := start(t, nil, 0)
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	traced := trace.ContextWithSpanContext(context.Background(),
		trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}))
	ctx, cancel := context.WithTimeout(traced, 20*time.Second)
	defer cancel()
	c, answer := b.Submit(ctx, "traceparent", `{}`, Hearing{}).Wait()
	if want := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"; !answer || c.GetStdout() != want {
		t.Errorf("traced: %v %v, want the backend to have seen %s", c, answer, want)
	}
	if c := answered(t, b, "traceparent", `{}`); c.GetStdout() != "" {
		t.Errorf("untraced: the backend saw %q", c.GetStdout())
	}
}
