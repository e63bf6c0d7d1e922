package mcpserve

import (
	"net/http"
	"strings"
	"testing"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
)

// The endpoint answers a tools/call itself only when it is plain: every
// request the SDK would check differently, or that needs the SDK's
// session, is left to the SDK (the gateway's equivalence test compares
// the answers of both).
func TestOnlyAPlainStatelessCallIsAnsweredInFrontOfTheSDK(t *testing.T) {
	t.Parallel()
	v := &view{tools: map[string]entry{
		"box_echo":   {client: "box", def: &registryv1.Tool{Name: "echo", InputSchema: `{"type":"object"}`}},
		"box_header": {client: "box", def: &registryv1.Tool{Name: "header", InputSchema: `{"type":"object","properties":{"r":{"type":"string","x-mcp-header":"R"}}}`}},
	}}
	const (
		triple = `"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}`
		plain  = `{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "box_echo", "arguments": {}, "_meta": {` + triple + `}}}`
	)
	headers := func(change func(http.Header)) http.Header {
		h := http.Header{}
		h.Set("Content-Type", "application/json; charset=utf-8")
		h.Set("Accept", "application/json, text/event-stream")
		h.Set("Mcp-Protocol-Version", "2026-07-28")
		h.Set("Mcp-Method", "tools/call")
		h.Set("Mcp-Name", "box_echo")
		if change != nil {
			change(h)
		}
		return h
	}
	for _, tt := range []struct {
		name   string
		method string
		header http.Header
		body   string
		want   bool
	}{
		{"a plain call", "", headers(nil), plain, true},
		{"an unknown tool", "", headers(func(h http.Header) { h.Set("Mcp-Name", "box_nope") }), strings.Replace(plain, "box_echo", "box_nope", 1), true},
		{"a string id", "", headers(nil), strings.Replace(plain, `"id": 1`, `"id": "a-1"`, 1), true},
		{"a GET", http.MethodGet, headers(nil), plain, false},
		{"the era with sessions", "", headers(func(h http.Header) { h.Set("Mcp-Protocol-Version", "2025-11-25") }), plain, false},
		{"a later revision", "", headers(func(h http.Header) { h.Set("Mcp-Protocol-Version", "2027-01-01") }), plain, false},
		{"a session id", "", headers(func(h http.Header) { h.Set("Mcp-Session-Id", "s") }), plain, false},
		{"another content type", "", headers(func(h http.Header) { h.Set("Content-Type", "text/plain") }), plain, false},
		{"an Accept without event streams", "", headers(func(h http.Header) { h.Set("Accept", "application/json") }), plain, false},
		{"a parameter header", "", headers(func(h http.Header) { h.Set("Mcp-Param-R", "x") }), plain, false},
		{"a tool with parameter headers", "", headers(func(h http.Header) { h.Set("Mcp-Name", "box_header") }), strings.Replace(plain, "box_echo", "box_header", 1), false},
		{"a batch", "", headers(nil), "[" + plain + "]", false},
		{"a notification", "", headers(nil), strings.Replace(plain, `"id": 1, `, "", 1), false},
		{"a float id", "", headers(nil), strings.Replace(plain, `"id": 1`, `"id": 1.5`, 1), false},
		{"a key in another case", "", headers(nil), strings.Replace(plain, `"method"`, `"Method"`, 1), false},
		{"a duplicate key", "", headers(nil), strings.Replace(plain, `"id": 1`, `"id": 1, "id": 2`, 1), false},
		{"trailing bytes", "", headers(nil), plain + "{}", false},
		{"another method", "", headers(func(h http.Header) { h.Set("Mcp-Method", "tools/list") }), strings.Replace(plain, "tools/call", "tools/list", 1), false},
		{"a progress token", "", headers(nil), strings.Replace(plain, triple, `"progressToken": 1, `+triple, 1), false},
		{"a Tasks call", "", headers(nil), strings.Replace(plain, `clientCapabilities": {}`, `clientCapabilities": {"extensions": {"`+TasksExtension+`": {}}}`, 1), false},
		{"a bad client identity", "", headers(nil), strings.Replace(plain, triple, `"io.modelcontextprotocol/clientInfo": "me", `+triple, 1), false},
		{"params the SDK would take for a retry", "", headers(nil), strings.Replace(plain, `"arguments"`, `"requestState": "x", "arguments"`, 1), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			method := tt.method
			if method == "" {
				method = http.MethodPost
			}
			r, err := http.NewRequest(method, "http://gateway/mcp", nil)
			if err != nil {
				t.Fatal(err)
			}
			r.Header = tt.header
			if _, got := v.plainCall(r, []byte(tt.body)); got != tt.want {
				t.Fatalf("answered in front of the SDK: %v, want %v", got, tt.want)
			}
		})
	}
}
