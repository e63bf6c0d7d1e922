package follower

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/telemetry"
)

// runSpan continues the trace of the call that posted inv
// (docs/observability.md): the run is a child of the driver's span though
// it happens later, on another connection, and what the run sends on (a
// tool's TRACEPARENT, an MCP request's _meta, the Complete call) is a
// child of the run.
func (f *Follower) runSpan(ctx context.Context, inv *mailboxv1.Invocation) (context.Context, trace.Span) {
	ctx = telemetry.Extract(ctx, inv.GetTraceContext())
	if f.o.Telemetry == nil || !f.o.Telemetry.Tracing() {
		return ctx, noop.Span{}
	}
	return f.o.Telemetry.Tracer("switchboard/follower").Start(ctx, "run "+inv.GetTool(),
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(
			attribute.String("switchboard.invocation", inv.GetInvocation()),
			attribute.String("switchboard.tool", inv.GetTool()),
			attribute.Int("switchboard.delivery", int(inv.GetDelivery())),
		))
}
