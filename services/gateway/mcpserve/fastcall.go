package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-run/switchboard/kit/lib/rawjson"
	"github.com/switchboard-run/switchboard/kit/suite/mcptelemetry"
)

// The stateless era's tools/call, answered in front of the SDK, whose
// handler would build a session and decode the message again at more than
// the rest of the call's cost (docs/bench.md). It runs the handler the SDK
// would, with the same checks, mapping and framing; anything it does not
// fully understand (a batch, a progressToken, another revision, an unknown
// header) goes to the SDK unchanged. docs/mcp.md, "tools/call".

// The stateless-era headers a tools/call carries (SEP-2243): the SDK
// refuses a request whose Mcp-Method or Mcp-Name disagree with its body.
const (
	methodHeader     = "Mcp-Method"
	nameHeader       = "Mcp-Name"
	paramHeaderStart = "Mcp-Param-"
)

// callMethod is the one method answered here.
const callMethod = "tools/call"

// metaProgressToken is the _meta key of a call that asks for progress,
// which the SDK relays through the session this path does not build.
const metaProgressToken = "progressToken"

// plainCall is a tools/call this file answers.
type plainCall struct {
	id  json.RawMessage // canonical, so it is echoed as the SDK re-encodes it
	req *mcp.CallToolRequest
}

// serveCall answers r itself when its body is a plain stateless-era
// tools/call, and reports whether it did; otherwise nothing was written and
// the body is untouched.
func (v *view) serveCall(rw http.ResponseWriter, r *http.Request, body []byte) bool {
	call, ok := v.plainCall(r, body)
	if !ok {
		return false
	}
	unbound(rw)
	f := &firstWriter{rw: rw}
	var raw *rawResult
	// The handler reads the request's context: a client that hangs up
	// cancels the call, as PropagateRequestCancellation makes the SDK do.
	ctx := context.WithValue(context.WithValue(r.Context(), handleFirstKey{}, f), passBytesKey{}, &raw)
	res, ran, err := v.runCall(ctx, call.req)
	if rpcErr, ok := errors.AsType[*jsonrpc.Error](err); ok {
		// A server's own error, answered as the SDK answers a handler's.
		e := &rpcError{Code: int(rpcErr.Code), Message: rpcErr.Message}
		if len(rpcErr.Data) > 0 {
			e.Data = rpcErr.Data
		}
		f.answer(rpcMessage(call.id, nil, e), errorStatus(r, e.Code))
		return true
	}
	if err != nil || res == nil {
		// Neither the handler nor the refusal ever fails; should that change,
		// the client still gets an answer rather than a hang.
		f.answer(rpcMessage(call.id, nil, &rpcError{Code: codeInternal, Message: "tools/call produced no result"}), http.StatusOK)
		return true
	}
	if raw != nil {
		f.answer(v.rawResultMessage(call.id, raw), http.StatusOK)
		return true
	}
	f.answer(v.resultMessage(call.id, res, ran), http.StatusOK)
	return true
}

// runCall runs what the SDK's server runs for a tools/call past its
// transport: the refusal of a name the view does not offer (unknownTools),
// else the tool's handler, inside the metrics middleware. ran reports
// whether the handler ran: only then does the SDK mark the result's
// resultType (its callTool does); a refusal is marked here, as
// unknownTools marks it for the SDK.
func (v *view) runCall(ctx context.Context, req *mcp.CallToolRequest) (res *mcp.CallToolResult, ran bool, err error) {
	h := func(ctx context.Context, _ string, _ mcp.Request) (mcp.Result, error) {
		e, refused := v.resolve(req.Params.Name)
		if refused != nil {
			return completed(refused), nil
		}
		ran = true
		return v.m.handler(req.Params.Name, e)(ctx, req)
	}
	if v.m.opts.Metrics != nil {
		h = v.m.opts.Metrics.Middleware(mcptelemetry.Endpoint)(h)
	}
	out, err := h(ctx, callMethod, req)
	res, _ = out.(*mcp.CallToolResult)
	return res, ran, err
}

// plainCall returns the tools/call in body when r is one this file answers
// exactly as the SDK would, and ok false for anything else.
func (v *view) plainCall(r *http.Request, body []byte) (plainCall, bool) {
	h := r.Header
	if r.Method != http.MethodPost || h.Get("Mcp-Protocol-Version") != firstStatelessRevision ||
		len(h.Values("Mcp-Session-Id")) > 0 || len(h.Values("Last-Event-ID")) > 0 ||
		h.Get(methodHeader) != callMethod || !jsonContent(h.Get("Content-Type")) || !acceptsBoth(h.Values("Accept")) {
		return plainCall{}, false
	}
	for k := range h {
		if strings.HasPrefix(k, paramHeaderStart) {
			return plainCall{}, false // parameters in headers: the SDK checks them against the tool's schema
		}
	}
	if len(body) == 0 || !utf8.Valid(body) || !json.Valid(body) {
		return plainCall{}, false
	}
	msg, ok := members(body, "jsonrpc", "id", "method", "params")
	if !ok || string(msg["jsonrpc"]) != `"2.0"` || string(msg["method"]) != `"`+callMethod+`"` || !plainID(msg["id"]) {
		return plainCall{}, false
	}
	params, ok := members(msg["params"], "name", "arguments", "_meta")
	if !ok {
		return plainCall{}, false
	}
	p := &mcp.CallToolParamsRaw{Arguments: params["arguments"]}
	if json.Unmarshal(params["name"], &p.Name) != nil || p.Name == "" || p.Name != h.Get(nameHeader) {
		return plainCall{}, false
	}
	if p.Meta, ok = v.metas.plain(params["_meta"], func() (mcp.Meta, bool) {
		var meta mcp.Meta
		return meta, json.Unmarshal(params["_meta"], &meta) == nil && plainMeta(meta)
	}); !ok {
		return plainCall{}, false
	}
	if e, known := v.lookup(p.Name); known && strings.Contains(e.def.GetInputSchema(), "x-mcp-header") {
		return plainCall{}, false // the SDK binds such a tool's parameters to headers
	}
	return plainCall{id: msg["id"], req: &mcp.CallToolRequest{Params: p, Extra: &mcp.RequestExtra{Header: h}}}, true
}

// plainMeta reports whether a call's _meta is the stateless era's triple
// as the SDK accepts it (the revision the header names, the client's
// capabilities, its identity if given), with nothing that needs the SDK's
// session: no progress token, no Tasks.
func plainMeta(meta mcp.Meta) bool {
	if meta[mcp.MetaKeyProtocolVersion] != firstStatelessRevision || declaresTasks(meta) {
		return false
	}
	if _, progress := meta[metaProgressToken]; progress {
		return false
	}
	if _, logs := meta[mcp.MetaKeyLogLevel]; logs {
		return false // log messages go on the call's stream, which the SDK's session sends
	}
	// The SDK's own decoding of the two, through a request's accessors.
	probe := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Meta: meta}}
	if _, isObject := meta[mcp.MetaKeyClientCapabilities].(map[string]any); !isObject || probe.ClientCapabilities() == nil {
		return false
	}
	if _, given := meta[mcp.MetaKeyClientInfo]; given {
		if _, isObject := meta[mcp.MetaKeyClientInfo].(map[string]any); !isObject || probe.ClientInfo() == nil {
			return false
		}
	}
	return true
}

// lookup is the entry the view presents as name.
func (v *view) lookup(name string) (entry, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	e, ok := v.tools[name]
	return e, ok
}

// resultMessage is the JSON-RPC response the SDK sends for res in the
// stateless era: the result with the server's identity in _meta, and, when
// the tool's handler made it (ran), its resultType: "input_required" when
// it asks for input, else "complete".
func (v *view) resultMessage(id json.RawMessage, res *mcp.CallToolResult, ran bool) []byte {
	if res.Meta == nil {
		res.Meta = mcp.Meta{}
	}
	if _, ok := res.Meta[mcp.MetaKeyServerInfo]; !ok {
		res.Meta[mcp.MetaKeyServerInfo] = v.impl
	}
	raw, err := res.MarshalJSON()
	if err != nil || len(raw) < 2 || raw[len(raw)-1] != '}' {
		return rpcMessage(id, nil, &rpcError{Code: codeInternal, Message: "encoding the tools/call result failed"})
	}
	var b bytes.Buffer
	b.Grow(len(raw) + len(id) + 64)
	b.WriteString(`{"jsonrpc":"2.0","id":`)
	b.Write(id)
	b.WriteString(`,"result":`)
	switch {
	case ran && res.InputRequests != nil:
		b.Write(raw[:len(raw)-1])
		b.WriteString(`,"resultType":"input_required"}}`)
	case ran:
		b.Write(raw[:len(raw)-1])
		b.WriteString(`,"resultType":"complete"}}`)
	default:
		b.Write(raw)
		b.WriteString(`}`)
	}
	return b.Bytes()
}

// rpcMessage is a JSON-RPC response, encoded as the SDK encodes it (no
// HTML escaping).
func rpcMessage(id json.RawMessage, result any, rerr *rpcError) []byte {
	return jsonValue(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result,omitempty"`
		Error   *rpcError       `json:"error,omitempty"`
	}{"2.0", id, result, rerr})
}

// jsonValue is v encoded as the SDK encodes (no HTML escaping); an error
// (a value that cannot encode) gives what was written, nothing.
func jsonValue(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return bytes.TrimRight(b.Bytes(), "\n")
}

// writeEvent writes msg as the whole reply, framed as the SDK's stateless
// handler frames a POST's answer: one server-sent event "message", without
// an id (no event store). The SDK flushes the event, as a stream may have
// more to come; this reply is all there is, so it goes with its length and
// unflushed, and net/http writes it, headers and all, in one system call
// once the handler returns (a flush would make it two: the chunk, then the
// chunked body's end).
func writeEvent(rw http.ResponseWriter, msg []byte) {
	frame := eventFrame(msg)
	h := rw.Header()
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("Content-Type", "text/event-stream")
	h.Set("Connection", "keep-alive")
	h.Set("Content-Length", strconv.Itoa(len(frame)))
	_, _ = rw.Write(frame)
}

// eventFrame is msg as one server-sent event "message".
func eventFrame(msg []byte) []byte {
	const head, tail = "event: message\ndata: ", "\n\n"
	b := make([]byte, 0, len(head)+len(msg)+len(tail))
	return append(append(append(b, head...), msg...), tail...)
}

// jsonContent reports whether a Content-Type is application/json, as the
// SDK requires of a POST.
func jsonContent(value string) bool {
	t, _, err := mime.ParseMediaType(value)
	return err == nil && t == "application/json"
}

// acceptsBoth reports whether Accept takes both JSON and an event stream,
// as the SDK requires of a POST (its streamableAccepts, which is not
// exported).
func acceptsBoth(values []string) bool {
	var jsonOK, streamOK bool
	for _, value := range values {
		for _, raw := range strings.Split(value, ",") {
			base, _, _ := strings.Cut(strings.TrimSpace(raw), ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK && streamOK
}

// plainID reports whether a JSON-RPC id reads back as the SDK writes it: a
// non-negative integer in canonical form that a float64 holds exactly (the
// SDK decodes numbers so), or a string of plain characters.
func plainID(raw json.RawMessage) bool {
	s := string(raw)
	if n := len(s); n >= 2 && s[0] == '"' && s[n-1] == '"' {
		return n <= 2+maxTaskID && strings.Trim(s[1:n-1], "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:") == ""
	}
	if s == "" || len(s) > 15 || (s[0] == '0' && len(s) > 1) {
		return false
	}
	return strings.Trim(s, "0123456789") == ""
}

// members is a JSON object's members when it is an object whose keys are
// distinct and among allowed (matched exactly, where decoders differ in
// case and in duplicates). raw must be valid JSON (plainCall checks the body
// once; params is cut from it).
func members(raw []byte, allowed ...string) (map[string]json.RawMessage, bool) {
	var buf [4]rawjson.Member // a call's objects have at most four members
	ms, ok := rawjson.Members(buf[:0], raw)
	if !ok {
		return nil, false
	}
	out := make(map[string]json.RawMessage, len(ms))
	for _, m := range ms {
		if !slices.Contains(allowed, m.Key) {
			return nil, false
		}
		if _, dup := out[m.Key]; dup {
			return nil, false
		}
		out[m.Key] = m.Value
	}
	return out, true
}
