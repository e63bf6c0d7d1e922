package stdio

import (
	"context"
	"errors"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	sjson "github.com/segmentio/encoding/json"
)

// The SDK decodes a tools/call answer twice, each time with a 32 KiB
// decoder: most of the bridge's allocations (docs/bench.md). With
// Transport.DecodeToolResults the connection decodes the common answer
// (text blocks, isError, _meta) itself with the SDK's parser and passes it
// past the SDK as a *ToolResult error, which the ToolResults middleware
// turns back into the result; anything else goes to the SDK whole.

// ToolResult is a tools/call result the connection decoded itself, carried
// to ToolResults as the error of the SDK's response.
type ToolResult struct {
	Result *mcp.CallToolResult
}

func (*ToolResult) Error() string {
	return "a tools/call result decoded by the bridge's stdio transport reached the caller as an error: the ToolResults middleware is not installed on the client"
}

// ToolResults is the sending middleware that gives back the result a
// connection with DecodeToolResults decoded. A client on such a transport
// must add it before any other, so that it is the innermost: every other
// middleware then sees the result as the SDK would have decoded it.
func ToolResults(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		var tr *ToolResult
		if err != nil && errors.As(err, &tr) {
			return tr.Result, nil
		}
		return res, err
	}
}

// maxPendingCalls bounds the tools/call ids awaiting an answer. A call
// cancelled upstream may never be answered, leaving its id behind; past the
// bound the set is emptied, and the answers it held take the SDK's way.
const maxPendingCalls = 4096

// pendingCalls are the ids of the tools/call requests not yet answered.
type pendingCalls struct {
	mu  sync.Mutex
	ids map[jsonrpc.ID]struct{}
}

func (p *pendingCalls) add(id jsonrpc.ID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ids == nil || len(p.ids) >= maxPendingCalls {
		p.ids = make(map[jsonrpc.ID]struct{})
	}
	p.ids[id] = struct{}{}
}

// take says whether id was pending, and forgets it.
func (p *pendingCalls) take(id jsonrpc.ID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.ids[id]
	delete(p.ids, id)
	return ok
}

// sent notes a tools/call request before it is written (its answer may be
// read before the write returns).
func (c *conn) sent(msg jsonrpc.Message) {
	if req, ok := msg.(*jsonrpc.Request); ok && c.calls != nil && req.Method == "tools/call" && req.ID.IsValid() {
		c.calls.add(req.ID)
	}
}

// toolResult replaces the answer to a pending tools/call with the result
// decoded here, when decodeToolResult can; any other message is msg.
func (c *conn) toolResult(msg jsonrpc.Message) jsonrpc.Message {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok || c.calls == nil || !c.calls.take(resp.ID) || resp.Error != nil {
		return msg
	}
	res, ok := decodeToolResult(resp.Result)
	if !ok {
		return msg
	}
	return &jsonrpc.Response{ID: resp.ID, Error: &ToolResult{Result: res}}
}

// fastResult is the answer decodeToolResult takes: any other member is
// unknown, and the answer is left to the SDK.
type fastResult struct {
	Meta       mcp.Meta    `json:"_meta"` // 2026-07-28 servers name themselves in it
	Content    []fastBlock `json:"content"`
	IsError    bool        `json:"isError"`
	ResultType *string     `json:"resultType"`
}

// fastBlock is a text block with no _meta or annotations.
type fastBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// completeResult is an empty result of resultType "complete" (2026-07-28
// servers send it), decoded once by the SDK: the field is unexported, so a
// result of that type is made by copying this one.
var completeResult = sync.OnceValues(func() (mcp.CallToolResult, error) {
	var r mcp.CallToolResult
	err := r.UnmarshalJSON([]byte(`{"resultType":"complete"}`))
	return r, err
})

// decodeToolResult decodes raw, a tools/call result, as the SDK would, when
// it holds only _meta, text blocks, isError and a resultType of "complete"; ok is
// false for anything else, which is the SDK's to decode.
func decodeToolResult(raw []byte) (_ *mcp.CallToolResult, ok bool) {
	if raw = trimSpace(raw); len(raw) == 0 || raw[0] != '{' {
		return nil, false
	}
	var w fastResult
	rest, err := sjson.Parse(raw, &w, parseFlags|sjson.DisallowUnknownFields)
	if err != nil || len(trimSpace(rest)) > 0 {
		return nil, false
	}
	res := &mcp.CallToolResult{}
	if w.ResultType != nil {
		if *w.ResultType != "complete" {
			return nil, false
		}
		tmpl, err := completeResult()
		if err != nil {
			return nil, false
		}
		*res = tmpl
	}
	res.Content = make([]mcp.Content, 0, len(w.Content))
	for _, b := range w.Content {
		if b.Type != "text" {
			return nil, false
		}
		res.Content = append(res.Content, &mcp.TextContent{Text: b.Text})
	}
	res.Meta, res.IsError = w.Meta, w.IsError
	return res, true
}
