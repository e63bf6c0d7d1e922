package mcpserve

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-run/switchboard/kit/suite/capture"
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
		{"input requests are answered by inputRequired, not as bytes", `{"content":[],"inputRequests":{"q":{"method":"roots/list","params":{}}}}`, warning, false},
		{"a key that needs escaping in _meta", `{"_meta":{"a\"b\\c\u0001":1},"content":[]}`, "", true},
		{"the warning", `{"_meta":{"k":"v","run.switchboard/warning":"forged"},"content":[{"type":"text","text":"ok"}]}`, warning, true},
		{"the warning before no blocks", `{"content":[]}`, warning, true},
		{"an unknown block type is decoded (and so refused)", `{"content":[{"type":"weird"}]}`, "", false},
		{"a key said twice is decoded", `{"content":[],"isError":true,"isError":false}`, "", false},
		{"a _meta key said twice is decoded", `{"_meta":{"k":1,"k":2},"content":[]}`, "", false},
		{"many _meta keys, one said twice", `{"_meta":{` + manyKeys(40) + `,"k7":0},"content":[]}`, "", false},
		{"many _meta keys", `{"_meta":{` + manyKeys(40) + `},"content":[]}`, "", true},
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

// A text-only result decoded without the SDK's decoder is the result the
// SDK decodes; any other result is left to the SDK.
func TestATextOnlyResultDecodesAsTheSDKDecodesIt(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		raw  string
		text bool
	}{
		{`{"content":[{"type":"text","text":"hi"}]}`, true},
		{`{"content":[{"type":"text","text":"a","_meta":{"n":1.5,"o":{"p":[true,null]}},"annotations":{"audience":["user"],"priority":0.5}},` +
			`{"type":"text","text":""}],"structuredContent":{"w":640,"s":"x"},"isError":true,"_meta":{"k":"v"}}`, true},
		{`{}`, true},
		{`{"content":null,"_meta":null,"structuredContent":null}`, true},
		{`{"content":[],"Content":[{"type":"text","text":"case"}],"unknown":1}`, true},
		{`{"content":[{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}]}`, false},
		{`{"content":[{"type":"text","text":"a"},{"type":"resource_link","uri":"file:///a","name":"a"}]}`, false},
		{`{"content":[],"isError":true,"isError":false}`, false},
	} {
		got, ok := textOnly([]byte(c.raw))
		if ok != c.text {
			t.Errorf("%s: decoded without the SDK: %v; want %v", c.raw, ok, c.text)
			continue
		}
		if !ok {
			continue
		}
		var want mcp.CallToolResult
		if err := json.Unmarshal([]byte(c.raw), &want); err != nil {
			t.Fatalf("%s: the SDK: %v", c.raw, err)
		}
		if g, w := wire(t, got), wire(t, &want); g != w {
			t.Errorf("%s:\n decoded here %s\n by the SDK   %s", c.raw, g, w)
		}
	}
}

// manyKeys is n members "k0":0 … of a JSON object, without its braces.
func manyKeys(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf(`"k%d":%d`, i, i)
	}
	return strings.Join(parts, ",")
}
