package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/lib/rawjson"
)

// The fast path (fastcall.go) passes a server's result on as its bytes,
// cutting out the members passedOn keeps: the SDK's decoder cost every
// call a 32 KiB buffer (docs/bench.md, "The MCP endpoint's hot path").

// rawResult is a result passed on as bytes. Its CallToolResult, which the
// handler returns in its stead, says only whether the tool failed (for the
// metrics).
type rawResult struct {
	mcp.CallToolResult
	members rawMembers
	warning string
}

// rawMembers are the members of a server's result the endpoint passes on,
// as their bytes; nil when absent.
type rawMembers struct {
	meta, content, structured json.RawMessage
}

// passBytesKey carries, on a call's context, where the handler leaves a
// result passed on as bytes (a **rawResult): only the fast path, which
// writes the reply itself, asks for one.
type passBytesKey struct{}

// passThrough leaves c's MCP result, as a rawResult, where ctx asks for
// one and returns it, when the result has the shape the SDK would decode
// (a content array of known block types, a _meta object, no member said
// twice); nil otherwise, and the caller decodes.
func passThrough(ctx context.Context, c *mailboxv1.Capture) *rawResult {
	slot, asked := ctx.Value(passBytesKey{}).(**rawResult)
	if c.McpResult == nil || !asked {
		return nil
	}
	raw := []byte(c.GetMcpResult())
	if !json.Valid(raw) {
		return nil
	}
	ms, ok := distinct(raw)
	if !ok {
		return nil
	}
	r := &rawResult{warning: c.GetWarning()}
	for _, m := range ms {
		switch m.Key {
		case "_meta":
			if string(m.Value) != "null" {
				r.members.meta = m.Value
			}
		case "content":
			r.members.content = m.Value
		case "structuredContent":
			if string(m.Value) != "null" {
				r.members.structured = m.Value
			}
		case "isError":
			if json.Unmarshal(m.Value, &r.IsError) != nil {
				return nil
			}
		case "inputRequests":
			return nil // only inputRequired answers one, and not with the warning: its text does
		}
	}
	if r.members.meta != nil {
		if _, ok := distinct(r.members.meta); !ok {
			return nil
		}
	}
	if !knownBlocks(r.members.content) {
		return nil
	}
	*slot = r
	return r
}

// distinct is obj's members when obj is an object that says no key twice
// (the SDK's decoder would keep the last; this says it once or not at all).
func distinct(obj []byte) ([]rawjson.Member, bool) {
	ms, ok := rawjson.Members(make([]rawjson.Member, 0, 8), obj)
	if !ok {
		return nil, false
	}
	if len(ms) <= 16 { // the usual few: no map
		for i := range ms {
			for j := range i {
				if ms[i].Key == ms[j].Key {
					return nil, false
				}
			}
		}
		return ms, true
	}
	seen := make(map[string]bool, len(ms))
	for _, m := range ms {
		if seen[m.Key] {
			return nil, false
		}
		seen[m.Key] = true
	}
	return ms, true
}

// blockTypes are the content types the SDK decodes in a tools/call result.
var blockTypes = map[string]bool{"text": true, "image": true, "audio": true, "resource_link": true, "resource": true,
	"tool_use": true, "tool_result": true}

// knownBlocks reports whether content is absent or an array of objects
// whose type the SDK knows.
func knownBlocks(content json.RawMessage) bool {
	if content == nil || string(content) == "null" {
		return true
	}
	blocks, ok := rawjson.Elements(nil, content)
	if !ok {
		return false
	}
	for _, b := range blocks {
		var buf [6]rawjson.Member
		ms, ok := rawjson.Members(buf[:0], b)
		if !ok {
			return false
		}
		var typ string
		for _, m := range ms {
			if m.Key == "type" && json.Unmarshal(m.Value, &typ) != nil {
				return false
			}
		}
		if !blockTypes[typ] {
			return false
		}
	}
	return true
}

// rawResultMessage is the JSON-RPC response carrying r, shaped as
// resultMessage shapes a decoded one: the server's _meta without its
// serverInfo, the endpoint's in its place and the mailbox's warning beside
// it; the warning also as the first block; resultType "complete".
func (v *view) rawResultMessage(id json.RawMessage, r *rawResult) []byte {
	var b bytes.Buffer
	b.Grow(len(r.members.meta) + len(r.members.content) + len(r.members.structured) + len(id) + len(r.warning)*2 + 256)
	b.WriteString(`{"jsonrpc":"2.0","id":`)
	b.Write(id)
	b.WriteString(`,"result":{"_meta":{`)
	if r.members.meta != nil {
		ms, _ := distinct(r.members.meta) // checked by passThrough
		for _, m := range ms {
			if m.Key == mcp.MetaKeyServerInfo || (r.warning != "" && m.Key == MetaWarning) {
				continue
			}
			writeMember(&b, m.Key, m.Value)
			b.WriteByte(',')
		}
	}
	var warning []byte
	if r.warning != "" {
		warning = jsonValue(r.warning)
		writeMember(&b, MetaWarning, warning)
		b.WriteByte(',')
	}
	writeMember(&b, mcp.MetaKeyServerInfo, v.implJSON)
	b.WriteString(`},"content":[`)
	if r.warning != "" {
		b.WriteString(`{"type":"text","text":`)
		b.Write(warning)
		b.WriteByte('}')
	}
	if c := bytes.TrimSpace(r.members.content); len(c) > 2 && string(c) != "null" {
		if inner := bytes.TrimSpace(c[1 : len(c)-1]); len(inner) > 0 {
			if r.warning != "" {
				b.WriteByte(',')
			}
			b.Write(inner)
		}
	}
	b.WriteByte(']')
	if r.members.structured != nil {
		b.WriteString(`,"structuredContent":`)
		b.Write(r.members.structured)
	}
	if r.IsError {
		b.WriteString(`,"isError":true`)
	}
	b.WriteString(`,"resultType":"complete"}}`)
	return b.Bytes()
}

func writeMember(b *bytes.Buffer, key string, value []byte) {
	if plainKey(key) {
		b.WriteByte('"')
		b.WriteString(key)
		b.WriteByte('"')
	} else {
		b.Write(jsonValue(key))
	}
	b.WriteByte(':')
	b.Write(value)
}

// plainKey reports whether key is written as it is between quotes.
func plainKey(key string) bool {
	for i := range len(key) {
		if c := key[i]; c < 0x20 || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
