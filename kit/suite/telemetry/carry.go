package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// w3c is the trace context every hop carries: HTTP and gRPC headers, an
// invocation's trace_context, a tool's TRACEPARENT, an MCP request's
// _meta.traceparent, a plugin request line's traceparent.
var w3c = propagation.TraceContext{}

// Inject returns ctx's trace context as W3C fields (traceparent and, when
// set, tracestate); nil when ctx carries no valid span context.
func Inject(ctx context.Context) map[string]string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return nil
	}
	c := propagation.MapCarrier{}
	w3c.Inject(ctx, c)
	return c
}

// Extract returns ctx continuing the trace fields carry (as Inject wrote
// them); ctx unchanged when they name none.
func Extract(ctx context.Context, fields map[string]string) context.Context {
	if len(fields) == 0 {
		return ctx
	}
	return w3c.Extract(ctx, propagation.MapCarrier(fields))
}

// Traceparent is ctx's W3C traceparent value; "" when ctx carries no span.
func Traceparent(ctx context.Context) string {
	return Inject(ctx)["traceparent"]
}
