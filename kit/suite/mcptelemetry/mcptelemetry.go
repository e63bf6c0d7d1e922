// Package mcptelemetry counts MCP requests (docs/observability.md): those
// the workspace endpoint serves and those the bridge sends to its
// upstream servers, by method and outcome, as go-sdk middleware.
package mcptelemetry

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchboard-run/switchboard/kit/suite/telemetry"
)

// Side says which end of MCP a request was counted at.
type Side string

const (
	// Endpoint is the workspace MCP endpoint the gateway serves.
	Endpoint Side = "endpoint"
	// Upstream is an MCP server the bridge mounted.
	Upstream Side = "upstream"
)

// Outcomes of a request.
const (
	OK        = "ok"         // answered
	ToolError = "tool_error" // a tools/call answered with isError
	Error     = "error"      // a JSON-RPC error, or no answer
)

// methods bounds the method label: a client may send any method name, and
// the ones MCP defines are the series worth keeping.
var methods = map[string]bool{
	"initialize": true, "ping": true, "tools/list": true, "tools/call": true,
	"resources/list": true, "resources/read": true, "resources/templates/list": true,
	"resources/subscribe": true, "resources/unsubscribe": true,
	"prompts/list": true, "prompts/get": true, "completion/complete": true,
	"logging/setLevel": true, "notifications/initialized": true,
	"notifications/cancelled": true, "notifications/progress": true,
	"notifications/tools/list_changed": true, "notifications/message": true,
}

// Metrics are the MCP request counters of one process.
type Metrics struct {
	requests *prometheus.CounterVec
	seconds  *prometheus.HistogramVec
}

// Register returns the process's MCP metrics, registering them on t the
// first time (the gateway and the bridge share them in one process).
func Register(t *telemetry.Telemetry) *Metrics {
	return &Metrics{
		requests: telemetry.Shared(t, "switchboard_mcp_requests_total", func() *prometheus.CounterVec {
			return prometheus.NewCounterVec(prometheus.CounterOpts{
				Name: "switchboard_mcp_requests_total",
				Help: "MCP requests, by side (endpoint: served by the workspace endpoint; upstream: sent by the bridge), method and outcome (ok, tool_error, error).",
			}, []string{"side", "method", "outcome"})
		}),
		seconds: telemetry.Shared(t, "switchboard_mcp_request_seconds", func() *prometheus.HistogramVec {
			return prometheus.NewHistogramVec(prometheus.HistogramOpts{
				Name:    "switchboard_mcp_request_seconds",
				Help:    "Time to answer an MCP request, by side and method.",
				Buckets: telemetry.LatencyBuckets,
			}, []string{"side", "method"})
		}),
	}
}

// Middleware counts every request that passes it on side.
func (m *Metrics) Middleware(side Side) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			start := time.Now()
			res, err := next(ctx, method, req)
			name := method
			if !methods[name] {
				name = "other"
			}
			m.requests.WithLabelValues(string(side), name, outcome(res, err)).Inc()
			m.seconds.WithLabelValues(string(side), name).Observe(time.Since(start).Seconds())
			return res, err
		}
	}
}

func outcome(res mcp.Result, err error) string {
	if err != nil {
		return Error
	}
	if r, ok := res.(*mcp.CallToolResult); ok && r.IsError {
		return ToolError
	}
	return OK
}
