package stdio

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	sjson "github.com/segmentio/encoding/json"

	"github.com/switchboard-run/switchboard/kit/lib/rawjson"
)

// The SDK decodes a tools/call answer twice, each time with a 32 KiB
// decoder: most of the bridge's allocations (docs/bench.md). With
// Transport.DecodeToolResults the connection decodes the common answer
// (text blocks, isError, _meta) itself with the SDK's parser and passes it
// past the SDK as a *ToolResult error, which the ToolResults middleware
// turns back into the result; anything else goes to the SDK whole.

// ToolResult is a tools/call result the connection decoded itself, carried
// to ToolResults as the error of the SDK's response: its text blocks and
// isError decoded, its _meta and the result to pass on (Whole) as bytes.
type ToolResult struct {
	Result *mcp.CallToolResult
	meta   []byte
	whole  []byte
}

// decoded is the result with its _meta decoded too, as the SDK would, for
// a caller that takes no Whole.
func (tr *ToolResult) decoded() (*mcp.CallToolResult, error) {
	if len(tr.meta) > 0 {
		if err := json.Unmarshal(tr.meta, &tr.Result.Meta); err != nil {
			return nil, fmt.Errorf("decoding the _meta of a tools/call result: %w", err)
		}
	}
	return tr.Result, nil
}

// Whole is filled, for a call whose context carries it (KeepWhole), with
// the result as the server sent it, less resultType and the server's name
// in _meta: what an MCP driver is answered with, never decoded and
// encoded again. It stays empty when the SDK decoded the result.
type Whole struct{ JSON []byte }

type wholeKey struct{}

// KeepWhole returns ctx carrying a Whole for the call made with it.
func KeepWhole(ctx context.Context) (context.Context, *Whole) {
	w := &Whole{}
	return context.WithValue(ctx, wholeKey{}, w), w
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
		if err == nil || !errors.As(err, &tr) {
			return res, err
		}
		if w, ok := ctx.Value(wholeKey{}).(*Whole); ok {
			w.JSON = tr.whole
			return tr.Result, nil
		}
		return tr.decoded()
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
	tr, ok := decodeToolResult(resp.Result)
	if !ok {
		return msg
	}
	return &jsonrpc.Response{ID: resp.ID, Error: tr}
}

// fastResult is the answer decodeToolResult takes: any other member is
// unknown, and the answer is left to the SDK.
type fastResult struct {
	Meta       json.RawMessage `json:"_meta"` // 2026-07-28 servers name themselves in it
	Content    []fastBlock     `json:"content"`
	IsError    bool            `json:"isError"`
	ResultType *string         `json:"resultType"`
}

// fastBlock is a text block with no _meta or annotations.
type fastBlock struct {
	Type string  `json:"type"`
	Text *string `json:"text"`
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
func decodeToolResult(raw []byte) (_ *ToolResult, ok bool) {
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
	whole := true // unless a block's text is missing, which decoding fills in
	for _, b := range w.Content {
		if b.Type != "text" {
			return nil, false
		}
		if b.Text == nil {
			whole = false
			b.Text = new(string)
		}
		res.Content = append(res.Content, &mcp.TextContent{Text: *b.Text})
	}
	if m := trimSpace(w.Meta); len(m) > 0 && m[0] != '{' && string(m) != "null" {
		return nil, false // not an object: the SDK's to refuse
	}
	res.IsError = w.IsError
	tr := &ToolResult{Result: res, meta: w.Meta}
	if whole {
		tr.whole = passOn(raw)
	}
	return tr, true
}

// passOn is the result obj without resultType (the endpoint states its
// own) and without the server's name in _meta (the endpoint names itself);
// every other member as the server wrote it. It is nil, for the result to
// be encoded from its decoding instead, where the SDK's decoding changes
// what was sent: a null or missing content, a null anywhere, a lone
// surrogate, bytes not UTF-8, a member twice.
func passOn(obj []byte) []byte {
	if bytes.Contains(obj, []byte("null")) || bytes.Contains(obj, []byte(`\u`)) && surrogate(obj) || !utf8.Valid(obj) {
		return nil
	}
	members, ok := rawjson.Members(nil, obj)
	if !ok {
		return nil
	}
	content := false
	for i, m := range members {
		for _, before := range members[:i] {
			if before.Key == m.Key {
				return nil
			}
		}
		switch m.Key {
		case "content":
			content = len(m.Value) > 0 && m.Value[0] == '['
		case "resultType":
			members[i].Value = nil
		case "_meta":
			if members[i].Value, ok = withoutServerInfo(m.Value); !ok {
				return nil
			}
		}
	}
	if !content {
		return nil
	}
	return rawjson.Object(members)
}

// withoutServerInfo is meta less the server's name, or nil when nothing is
// left.
func withoutServerInfo(meta []byte) ([]byte, bool) {
	if string(trimSpace(meta)) == "null" {
		return nil, true
	}
	members, ok := rawjson.Members(nil, meta)
	if !ok {
		return nil, false
	}
	kept := members[:0]
	for _, m := range members {
		if m.Key != mcp.MetaKeyServerInfo {
			kept = append(kept, m)
		}
	}
	if len(kept) == 0 {
		return nil, true
	}
	return rawjson.Object(kept), true
}

// surrogate says whether obj escapes a UTF-16 surrogate (\uD800-\uDFFF),
// which a decoder may pair or replace.
func surrogate(obj []byte) bool {
	for i := bytes.Index(obj, []byte(`\u`)); i >= 0 && i+3 < len(obj); {
		if c := obj[i+2]; (c == 'd' || c == 'D') && strings.ContainsRune("89abcdefABCDEF", rune(obj[i+3])) {
			return true
		}
		next := bytes.Index(obj[i+2:], []byte(`\u`))
		if next < 0 {
			break
		}
		i += 2 + next
	}
	return false
}
