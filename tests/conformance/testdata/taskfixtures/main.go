// Command taskfixtures is an MCP server over stdio with the fixture tools
// the conformance suite's Tasks scenarios call (greet, slow_compute,
// failing_job, protocol_error_job). It knows nothing of Tasks: mounted on
// the bridge, Switchboard serves its calls as tasks (docs/mcp.md, "Tasks").
package main

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type greetIn struct {
	Name string `json:"name"`
}

type computeIn struct {
	Seconds float64 `json:"seconds"`
	Label   string  `json:"label,omitempty"`
}

type none struct{}

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "task-fixtures", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "greet", Description: "Says hello to name"}, func(_ context.Context, _ *mcp.CallToolRequest, in greetIn) (*mcp.CallToolResult, any, error) {
		return text(fmt.Sprintf("Hello, %s!", in.Name)), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "slow_compute", Description: "Sleeps the seconds given, then answers"}, func(ctx context.Context, _ *mcp.CallToolRequest, in computeIn) (*mcp.CallToolResult, any, error) {
		if err := sleep(ctx, time.Duration(in.Seconds*float64(time.Second))); err != nil {
			return nil, nil, err
		}
		return text(fmt.Sprintf("computed %q after %gs", in.Label, in.Seconds)), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "failing_job", Description: "Fails as a tool after a second"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
		if err := sleep(ctx, time.Second); err != nil {
			return nil, nil, err
		}
		res := text("the job failed, as it always does")
		res.IsError = true
		return res, nil, nil
	})
	s.AddTool(&mcp.Tool{Name: "protocol_error_job", Description: "Answers a JSON-RPC error", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "protocol_error_job fails at the protocol level"}
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// sleep waits d or until the call is cancelled.
func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
