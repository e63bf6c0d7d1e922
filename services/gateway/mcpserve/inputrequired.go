package mcpserve

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/proto"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
)

// Multi round-trip requests (MCP 2026-07-28, SEP-2322) through the
// mailbox: a mounted server that needs input answers with an
// input_required result, which the bridge passes back whole; the endpoint
// answers the client with it, and the client's retry carries its answers
// and the server's state to the server in the invocation's mcp_params. A
// client of an older revision is asked by the SDK's server in its session
// instead, which then calls the tool again with the answers. docs/mcp.md,
// "Input requests".

// forwardedParams are the tools/call params a mounted server sees beyond
// the tool's name and arguments (Invocation.mcp_params).
type forwardedParams struct {
	InputResponses mcp.InputResponseMap `json:"inputResponses,omitempty"`
	RequestState   string               `json:"requestState,omitempty"`
	Meta           *forwardedMeta       `json:"_meta,omitempty"`
}

type forwardedMeta struct {
	ClientCapabilities map[string]any   `json:"io.modelcontextprotocol/clientCapabilities,omitempty"`
	LogLevel           mcp.LoggingLevel `json:"io.modelcontextprotocol/logLevel,omitempty"` // logs.go
	Answers            bool             `json:"run.switchboard/answers,omitempty"`          // questions.go
	Resolve            bool             `json:"run.switchboard/resolve,omitempty"`          // a Task: input_required asked as questions
}

// askableKeys are the client capabilities a server may ask for.
var askableKeys = []string{"elicitation", "sampling", "roots"}

// askable is what of a client's capabilities a server may ask it for, as
// the request's _meta carries them (the stateless era: read from the map,
// as the SDK's own decoding of them takes a 32 KiB buffer), or as its
// session's initialize declared them; nil for none.
func askable(meta mcp.Meta, session *mcp.ServerSession) map[string]any {
	var out map[string]any
	if caps, ok := meta[mcp.MetaKeyClientCapabilities].(map[string]any); ok {
		for _, k := range askableKeys {
			if v, ok := caps[k]; ok && v != nil {
				if out == nil {
					out = make(map[string]any, len(askableKeys))
				}
				out[k] = v
			}
		}
		return out
	}
	if session == nil || session.InitializeParams() == nil || session.InitializeParams().Capabilities == nil {
		return nil
	}
	caps := session.InitializeParams().Capabilities
	out = make(map[string]any, len(askableKeys))
	if caps.Elicitation != nil {
		out["elicitation"] = caps.Elicitation
	}
	if caps.Sampling != nil {
		out["sampling"] = caps.Sampling
	}
	if caps.RootsV2 != nil {
		out["roots"] = caps.RootsV2
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// mcpParams is the invocation's mcp_params for req: the client's answers,
// the server's state, what the client may be asked and the log messages it
// asked for (level); nil when there is none of these to send.
func mcpParams(req *mcp.CallToolRequest, level mcp.LoggingLevel, asks asking) (*string, error) {
	if req.Params == nil {
		return forwarded(nil, "", askable(nil, req.Session), level, asks)
	}
	return forwarded(req.Params.InputResponses, req.Params.RequestState, askable(req.Params.Meta, req.Session), level, asks)
}

// forwarded is the mcp_params of a request that answers with responses
// and state, from a client that may be asked caps, asking for log messages
// at level, whose questions the endpoint relays as asks says.
func forwarded(responses mcp.InputResponseMap, state string, caps map[string]any, level mcp.LoggingLevel, asks asking) (*string, error) {
	p := forwardedParams{InputResponses: responses, RequestState: state}
	if caps != nil || level != "" || asks != askNone {
		p.Meta = &forwardedMeta{ClientCapabilities: caps, LogLevel: level, Answers: asks != askNone, Resolve: asks == askTask}
	}
	if p.InputResponses == nil && p.RequestState == "" && p.Meta == nil {
		return nil, nil
	}
	b, err := json.Marshal(&p)
	if err != nil {
		return nil, err
	}
	return proto.String(string(b)), nil
}

// promptInput is a server's input_required answer to prompts/get, as the
// bridge passed it on, for the SDK to mark (or, for a client of an older
// revision, to ask it in its session and get the prompt again).
func promptInput(e catalogEntry, raw string) (*mcp.GetPromptResult, error) {
	var got mcp.GetPromptResult
	if err := json.Unmarshal([]byte(raw), &got); err != nil || got.InputRequests == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
			Message: fmt.Sprintf("prompt %q of client %q: the server's input request could not be read", e.name, e.client)}
	}
	return &mcp.GetPromptResult{Meta: got.Meta, InputRequests: got.InputRequests, RequestState: got.RequestState}, nil
}

// inputRequired is the server's input_required result a capture carries,
// as the endpoint answers it (the SDK marks its resultType); nil for any
// other capture.
func inputRequired(c *mailboxv1.Capture) *mcp.CallToolResult {
	if c.McpResult == nil || c.Warning != nil {
		return nil
	}
	if !strings.Contains(c.GetMcpResult(), `"inputRequests"`) { // the usual result, at a scan's cost
		return nil
	}
	var got mcp.CallToolResult
	if json.Unmarshal([]byte(c.GetMcpResult()), &got) != nil || got.InputRequests == nil {
		return nil
	}
	delete(got.Meta, mcp.MetaKeyServerInfo)
	return &mcp.CallToolResult{Meta: got.Meta, InputRequests: got.InputRequests, RequestState: got.RequestState}
}
