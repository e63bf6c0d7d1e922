// Command taskfixtures is an MCP server over stdio with the fixture tools
// the conformance suite's Tasks scenarios call (greet, slow_compute,
// failing_job, protocol_error_job, confirm_delete, multi_input). It knows
// nothing of Tasks: mounted on the bridge, Switchboard serves its calls as
// tasks, and its questions make them input_required (docs/mcp.md).
package main

import (
	"context"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
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

type deleteIn struct {
	Filename string `json:"filename"`
}

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
	mcp.AddTool(s, &mcp.Tool{Name: "confirm_delete", Description: "Asks the user to confirm, then says whether filename was deleted"}, func(_ context.Context, req *mcp.CallToolRequest, in deleteIn) (*mcp.CallToolResult, any, error) {
		return ask(req, in.Filename+": ", "Delete "+in.Filename+"?", "confirm"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "multi_input", Description: "Asks two questions at once, then answers with both"}, func(_ context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
		return ask(req, "", "Your input?", "first", "second"), nil, nil
	})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// ask asks the client a question under each key, all at once, in an
// input_required result (SEP-2322; the SDK asks a client of an older
// revision in its session), and answers once every key has its answer:
// prefix, then the answers' actions and contents in key order.
func ask(req *mcp.CallToolRequest, prefix, message string, keys ...string) *mcp.CallToolResult {
	answers := make([]string, 0, len(keys))
	for _, k := range keys {
		a, ok := req.Params.InputResponses[k].(*mcp.ElicitResult)
		if !ok {
			break
		}
		answers = append(answers, fmt.Sprintf("%s %v", a.Action, a.Content))
	}
	if len(answers) == len(keys) {
		return text(prefix + strings.Join(answers, "; "))
	}
	requests := mcp.InputRequestMap{}
	for _, k := range keys {
		requests[k] = &mcp.ElicitParams{Message: message, RequestedSchema: &jsonschema.Schema{Type: "object",
			Properties: map[string]*jsonschema.Schema{"confirm": {Type: "boolean"}, "name": {Type: "string"}}}}
	}
	return &mcp.CallToolResult{InputRequests: requests}
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
