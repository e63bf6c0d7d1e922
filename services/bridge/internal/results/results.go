// Package results turns what an MCP server answered to tools/call into a
// capture, the suite's stdio tool contract (docs/design.md §5). The mapping:
//
//   - text content goes to stdout, blocks joined with "\n";
//   - a result with isError is a tool failure: exit_code 1, the text on
//     stderr (it is a successful JSON-RPC answer carrying a message the model
//     needs, never a protocol error);
//   - a JSON-RPC error is exit_code 1 with stderr naming the protocol error;
//   - blocks that are not text are named ("[image content]") or, for an
//     embedded text resource, carried as text;
//   - structuredContent is kept: when no block carries text, stdout is its
//     JSON;
//   - stdout and stderr are each capped, with kit/capture's marker;
//   - the result itself travels whole beside them (Capture.mcp_result), for
//     MCP drivers, up to MaxResultBytes;
//   - a result asking for input (input_required) is a failure naming what
//     was asked, and travels whole for an MCP driver to answer.
package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/proto"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
)

// DefaultMaxChars caps stdout and stderr each when a server sets no cap.
const DefaultMaxChars = 100_000

// MaxResultBytes bounds the whole result passed on as JSON: with stdout and
// stderr at their default caps it stays under the mailbox's default
// --max-capture-bytes (4 MiB). A larger result reaches drivers as text only.
const MaxResultBytes = 3 << 20

// MaxErrorData bounds the data of a server's JSON-RPC error passed on; a
// larger one is left out.
const MaxErrorData = 64 << 10

// FromResult maps a tools/call result. limit caps stdout and stderr each
// (<= 0: DefaultMaxChars).
func FromResult(res *mcp.CallToolResult, limit int) *mailboxv1.Capture {
	return FromWhole(res, nil, limit)
}

// FromWhole is FromResult with the result to pass on already in JSON
// (whole, as the bridge's stdio transport keeps it); nil encodes res.
func FromWhole(res *mcp.CallToolResult, whole []byte, limit int) *mailboxv1.Capture {
	if limit <= 0 {
		limit = DefaultMaxChars
	}
	if res.NeedsInput() {
		return inputRequired(res, limit)
	}
	text := render(res)
	passed, err := wholeResult(res, whole)
	if err != nil {
		text = strings.TrimPrefix(text+"\n", "\n") + "[" + err.Error() + "]"
	}
	var c *mailboxv1.Capture
	if res.IsError {
		if text == "" {
			text = "the tool reported an error and gave no message"
		}
		c = capture.New("", capture.Cap(text, limit), capture.ExitError)
	} else {
		c = capture.New(capture.Cap(text, limit), "", 0)
	}
	if passed != "" {
		c.McpResult = &passed
	}
	return c
}

// inputRequired maps a result that asks the driver for input (MCP's
// input_required): for an MCP driver its requests and state travel whole,
// to be answered in a retry; any other driver cannot answer, and reads a
// failure naming what was asked.
func inputRequired(res *mcp.CallToolResult, limit int) *mailboxv1.Capture {
	asked := make([]string, 0, len(res.InputRequests))
	for _, id := range slices.Sorted(maps.Keys(res.InputRequests)) {
		asked = append(asked, fmt.Sprintf("%s (%s)", id, inputMethod(res.InputRequests[id])))
	}
	c := capture.Failed(capture.ExitError, "%s", capture.Cap(fmt.Sprintf(
		"the MCP server asks its client for input before it answers: %s; only an MCP client of revision 2026-07-28 or later can answer, by calling the tool again with inputResponses and requestState",
		strings.Join(asked, ", ")), limit))
	b, err := json.Marshal(&mcp.CallToolResult{Meta: WithoutServerInfo(res.Meta), Content: []mcp.Content{},
		InputRequests: res.InputRequests, RequestState: res.RequestState})
	if err == nil && len(b) <= MaxResultBytes {
		c.McpResult = proto.String(string(b))
	}
	return c
}

// inputMethod names the MCP request an input request stands for.
func inputMethod(r mcp.InputRequest) string {
	switch r.(type) {
	case *mcp.ElicitParams:
		return "elicitation/create"
	case *mcp.ListRootsParams:
		return "roots/list"
	default:
		return "sampling/createMessage"
	}
}

// wholeResult is res as JSON text, as MCP drivers answer it. The result
// type and serverInfo (which name the session's server and era) are the
// driver's to set for its own client.
func wholeResult(res *mcp.CallToolResult, b []byte) (string, error) {
	if b == nil {
		var err error
		b, err = json.Marshal(&mcp.CallToolResult{Meta: WithoutServerInfo(res.Meta), Content: res.Content, StructuredContent: res.StructuredContent, IsError: res.IsError})
		if err != nil {
			return "", fmt.Errorf("the server's result could not be passed on whole: %v", err)
		}
	}
	if len(b) > MaxResultBytes {
		return "", fmt.Errorf("the server's result is %d bytes, over the %d this bridge passes on whole; only its text is shown", len(b), MaxResultBytes)
	}
	return string(b), nil
}

// WithoutServerInfo is meta less the server's identity (the gateway names
// itself): a copy of the rest
// (a clone of the whole map would copy its table too, kilobytes on every
// call), or meta itself when it holds none.
func WithoutServerInfo(meta mcp.Meta) mcp.Meta {
	if _, ok := meta[mcp.MetaKeyServerInfo]; !ok {
		return meta
	}
	var rest mcp.Meta
	for k, v := range meta {
		if k != mcp.MetaKeyServerInfo {
			if rest == nil {
				rest = make(mcp.Meta, len(meta)-1)
			}
			rest[k] = v
		}
	}
	return rest
}

// render joins the result's blocks into text, naming what is not text.
func render(res *mcp.CallToolResult) string {
	var parts []string
	hasText := false
	for _, c := range res.Content {
		s, isText := block(c)
		hasText = hasText || isText
		parts = append(parts, s)
	}
	if !hasText && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append([]string{string(b)}, parts...)
		}
	}
	return strings.Join(parts, "\n")
}

// block renders one content block and says whether it carried text.
func block(c mcp.Content) (string, bool) {
	switch b := c.(type) {
	case *mcp.TextContent:
		return b.Text, true
	case *mcp.ImageContent:
		return "[image content]", false
	case *mcp.AudioContent:
		return "[audio content]", false
	case *mcp.ResourceLink:
		return fmt.Sprintf("[resource_link content: %s]", b.URI), false
	case *mcp.EmbeddedResource:
		if b.Resource != nil && b.Resource.Blob == nil {
			return b.Resource.Text, true
		}
		uri := ""
		if b.Resource != nil {
			uri = b.Resource.URI
		}
		return fmt.Sprintf("[resource content: %s]", uri), false
	default:
		// A block type newer than this bridge: name it by its JSON type
		// rather than dropping it silently.
		if raw, err := json.Marshal(c); err == nil {
			var head struct {
				Type string `json:"type"`
			}
			if json.Unmarshal(raw, &head) == nil && head.Type != "" {
				return fmt.Sprintf("[%s content]", head.Type), false
			}
		}
		return "[unknown content]", false
	}
}

// FromError maps a tools/call that got no result: a JSON-RPC error from the
// server (named with its code and message), or a failure to reach it.
// server and tool name them for the sentence.
func FromError(err error, server, tool string, limit int) *mailboxv1.Capture {
	if limit <= 0 {
		limit = DefaultMaxChars
	}
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) {
		c := capture.Failed(capture.ExitError, "%s", capture.Cap(fmt.Sprintf(
			"MCP server %q answered tools/call %q with JSON-RPC error %d: %s",
			server, tool, rpcErr.Code, rpcErr.Message), limit))
		e := capture.RPCError{Code: int(rpcErr.Code), Message: capture.Cap(rpcErr.Message, limit), Data: rpcErr.Data}
		if len(e.Data) > MaxErrorData {
			e.Data = nil // the code and message still say what went wrong
		}
		c.McpError = proto.String(e.Encode())
		return c
	}
	return capture.Failed(capture.ExitError, "%s", capture.Cap(fmt.Sprintf(
		"calling tool %q on MCP server %q failed: %v", tool, server, err), limit))
}
