package mcpserve

import (
	"encoding/json"
	"encoding/json/jsontext"
	jsonv2 "encoding/json/v2"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/lib/rawjson"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
)

// MetaWarning is the _meta key of the mailbox's warning on a result (a
// call handed out more than once may have run more than once); the same
// sentence is a text block of the result, for clients that read only those.
const MetaWarning = "run.switchboard/warning"

// fromCapture maps a capture to a tools/call result: an MCP server's own
// result when the capture carries one (passedOn), else its text; either
// way with the mailbox's warning in _meta.
func fromCapture(c *mailboxv1.Capture, hasOutputSchema bool) *mcp.CallToolResult {
	res := passedOn(c)
	if res == nil {
		res = fromText(c, hasOutputSchema) // the warning heads stderr, so a block says it
	}
	if w := c.GetWarning(); w != "" {
		res.Meta = withMeta(res.Meta, map[string]any{MetaWarning: w})
	}
	return res
}

// serverError is the JSON-RPC error a host's MCP server answered tools/call
// with, passed on as it was: that server's own clients would get it.
func serverError(c *mailboxv1.Capture) error {
	e := rpcErrorOf(c)
	if e == nil {
		return nil
	}
	return &jsonrpc.Error{Code: int64(e.Code), Message: e.Message, Data: e.Data}
}

// rpcErrorOf is the capture's mcp_error; nil without one, and for a capture
// with the mailbox's warning, which stays a result that can say it (as
// for one that does not read, which the mailbox never lets through).
func rpcErrorOf(c *mailboxv1.Capture) *capture.RPCError {
	if c.McpError == nil || c.Warning != nil {
		return nil
	}
	e, err := capture.ParseRPCError(c.GetMcpError())
	if err != nil {
		return nil
	}
	return &e
}

// passedOn is the result a host's MCP server answered, as it answered it,
// with the mailbox's warning as its first block; nil when the capture
// carries none, or one that does not decode (then its text stands in).
// What only the endpoint may say is dropped, whatever a host wrote: the
// result type (a retry or a task is never a host's to ask for) and
// serverInfo (the endpoint names itself).
func passedOn(c *mailboxv1.Capture) *mcp.CallToolResult {
	if c.McpResult == nil {
		return nil
	}
	got, ok := textOnly([]byte(c.GetMcpResult()))
	if !ok {
		got = new(mcp.CallToolResult)
		if err := json.Unmarshal([]byte(c.GetMcpResult()), got); err != nil {
			return nil
		}
	}
	if got.InputRequests != nil {
		return nil // an input_required result, which only a synchronous tools/call answers (inputRequired)
	}
	res := &mcp.CallToolResult{Meta: got.Meta, Content: got.Content, StructuredContent: got.StructuredContent, IsError: got.IsError}
	delete(res.Meta, mcp.MetaKeyServerInfo)
	if res.Content == nil {
		res.Content = []mcp.Content{} // "content" is required on the wire
	}
	if w := c.GetWarning(); w != "" {
		res.Content = append([]mcp.Content{&mcp.TextContent{Text: w}}, res.Content...)
	}
	return res
}

// textOnly decodes raw, a server's result, when its blocks are all text,
// as the SDK would but without its decoder, which takes a 32 KiB buffer
// per call; ok is false for anything else (a key said twice too), and
// the SDK decodes it.
func textOnly(raw []byte) (res *mcp.CallToolResult, ok bool) {
	var wire struct {
		Meta    mcp.Meta `json:"_meta"`
		Content []struct {
			Type        string           `json:"type"`
			Text        string           `json:"text"`
			Meta        mcp.Meta         `json:"_meta"`
			Annotations *mcp.Annotations `json:"annotations"`
		} `json:"content"`
		StructuredContent any            `json:"structuredContent"`
		IsError           bool           `json:"isError"`
		InputRequests     jsontext.Value `json:"inputRequests"` // the SDK's to decode
	}
	if jsonv2.Unmarshal(raw, &wire) != nil || wire.InputRequests != nil {
		return nil, false
	}
	res = &mcp.CallToolResult{Meta: wire.Meta, Content: make([]mcp.Content, 0, len(wire.Content)), StructuredContent: wire.StructuredContent, IsError: wire.IsError}
	for _, b := range wire.Content {
		if b.Type != "text" {
			return nil, false
		}
		res.Content = append(res.Content, &mcp.TextContent{Text: b.Text, Meta: b.Meta, Annotations: b.Annotations})
	}
	return res, true
}

// fromText maps a capture's text to a tools/call result: exit 0 is stdout
// as text, then a non-empty stderr as a second block (the mailbox writes
// there what a model must read); any other exit is isError with "exit code
// N" and stderr first, then stdout. With an output schema, a JSON object
// printed on success is also the structuredContent.
func fromText(c *mailboxv1.Capture, hasOutputSchema bool) *mcp.CallToolResult {
	stdout, stderr, code := c.GetStdout(), c.GetStderr(), c.GetExitCode()
	res := &mcp.CallToolResult{Content: []mcp.Content{}}
	if code != 0 {
		res.IsError = true
		head := fmt.Sprintf("exit code %d", code)
		if stderr != "" {
			head += "\n" + stderr
		}
		res.Content = append(res.Content, &mcp.TextContent{Text: head})
		if stdout != "" {
			res.Content = append(res.Content, &mcp.TextContent{Text: stdout})
		}
		return res
	}
	if stdout != "" {
		res.Content = append(res.Content, &mcp.TextContent{Text: stdout})
		if hasOutputSchema && rawjson.CheckObject("stdout", stdout) == nil {
			res.StructuredContent = json.RawMessage(stdout)
		}
	}
	if stderr != "" {
		res.Content = append(res.Content, &mcp.TextContent{Text: "stderr:\n" + stderr})
	}
	return res
}

// completed is res marked resultType "complete", which the stateless era
// asks of every tools/call result: the SDK marks only what its handlers
// return, not a middleware's refusal, and keeps the mark in an unexported
// field that only the result's own decoding sets.
func completed(res *mcp.CallToolResult) *mcp.CallToolResult {
	raw, err := json.Marshal(res)
	if err != nil || len(raw) < 2 {
		return res
	}
	marked := append(raw[:len(raw)-1:len(raw)-1], `,"resultType":"complete"}`...)
	out := new(mcp.CallToolResult)
	if json.Unmarshal(marked, out) != nil {
		return res
	}
	return out
}

// refusal is a call that produced no capture: isError with the sentence.
func refusal(sentence string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: sentence}}}
}
