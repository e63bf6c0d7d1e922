package mcptelemetry

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-run/switchboard/kit/suite/telemetry"
)

// TraceMeta is sending middleware that carries the caller's W3C trace
// context to an MCP server as params._meta.traceparent (and tracestate),
// the convention MCP servers that trace read: the server's spans join the
// driver's trace. It marks tools/call, the request a run makes; one whose
// context carries no span, or whose _meta names a traceparent already,
// goes as it is.
func TraceMeta(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		p, ok := req.GetParams().(*mcp.CallToolParams)
		fields := telemetry.Inject(ctx)
		if !ok || p == nil || len(fields) == 0 {
			return next(ctx, method, req)
		}
		meta := p.GetMeta()
		if _, set := meta["traceparent"]; set {
			return next(ctx, method, req)
		}
		merged := make(map[string]any, len(meta)+len(fields))
		for k, v := range meta {
			merged[k] = v
		}
		for k, v := range fields {
			merged[k] = v
		}
		p.SetMeta(merged)
		return next(ctx, method, req)
	}
}
