package mcpserve

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-run/switchboard/kit/capture"
)

// A server's result passed on as bytes reads, to a client, exactly as the
// same result decoded and encoded again: every kind of block, structured
// content, isError, _meta without the server's serverInfo and with the
// endpoint's, the mailbox's warning first and in _meta, resultType
// "complete" and nothing else the server said of the result's type. What
// the SDK would not decode as it is (a block type it does not know, a key
// said twice) is decoded instead.
func TestAResultPassedOnAsBytesReadsAsTheDecodedOne(t *testing.T) {
	t.Parallel()
	v := &view{impl: &mcp.Implementation{Name: "switchboard", Title: "Switchboard: default", Version: "test"}}
	v.implJSON = jsonValue(v.impl)
	const warning = `this invocation was handed to "b" 2 times; each hand-off may have run it`
	for _, c := range []struct {
		name, result, warning string
		passed                bool
	}{
		{"text", `{"content":[{"type":"text","text":"hi <b>"}]}`, "", true},
		{"every block", `{"content":[{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"},{"type":"audio","data":"UklGRg==","mimeType":"audio/wav"},` +
			`{"type":"resource_link","uri":"file:///a","name":"a"},{"type":"resource","resource":{"uri":"file:///b","text":"b","mimeType":"text/plain"}}]}`, "", true},
		{"structured, failed, _meta", ` { "_meta" : {"k":"v","io.modelcontextprotocol/serverInfo":{"name":"upstream"}}, "isError": true,` +
			` "structuredContent": {"w": 640}, "content": [ ] } `, "", true},
		{"no content at all", `{}`, "", true},
		{"null members", `{"content":null,"structuredContent":null,"_meta":null,"isError":false}`, "", true},
		{"a result type is the endpoint's to say", `{"content":[],"resultType":"input_required","requestState":"s"}`, "", true},
		{"a key that needs escaping in _meta", `{"_meta":{"a\"b\\c\u0001":1},"content":[]}`, "", true},
		{"the warning", `{"_meta":{"k":"v","run.switchboard/warning":"forged"},"content":[{"type":"text","text":"ok"}]}`, warning, true},
		{"the warning before no blocks", `{"content":[]}`, warning, true},
		{"an unknown block type is decoded (and so refused)", `{"content":[{"type":"weird"}]}`, "", false},
		{"a key said twice is decoded", `{"content":[],"isError":true,"isError":false}`, "", false},
		{"a _meta key said twice is decoded", `{"_meta":{"k":1,"k":2},"content":[]}`, "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			capt := withResult(capture.New("[content]", "", 0), c.result, c.warning)
			var slot *rawResult
			raw := passThrough(context.WithValue(context.Background(), passBytesKey{}, &slot), capt)
			if (raw != nil) != c.passed || slot != raw {
				t.Fatalf("passed on as bytes: %v (slot %v); want %v", raw != nil, slot != nil, c.passed)
			}
			decoded := string(v.resultMessage(json.RawMessage(`7`), fromCapture(capt, false), true))
			if raw == nil {
				return
			}
			got := string(v.rawResultMessage(json.RawMessage(`7`), raw))
			if !json.Valid([]byte(got)) || !sameJSON(t, got, decoded) {
				t.Errorf("as bytes: %s\n decoded: %s", got, decoded)
			}
		})
	}
	if passThrough(context.Background(), withResult(capture.New("", "", 0), `{"content":[]}`, "")) != nil {
		t.Error("a result was passed on as bytes where nobody asked for them")
	}
}
