package stdio

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	sjson "github.com/segmentio/encoding/json"
)

// sdkToolResult decodes raw as the SDK's client does a tools/call answer:
// its internal json.Unmarshal (a Decoder with exact field names) into a
// CallToolResult, whose UnmarshalJSON decodes it again.
func sdkToolResult(raw []byte) (*mcp.CallToolResult, error) {
	res := new(mcp.CallToolResult)
	dec := sjson.NewDecoder(bytes.NewReader(raw))
	dec.DontMatchCaseInsensitiveStructFields()
	return res, dec.Decode(res)
}

var toolResultCases = []struct {
	name, raw string
	fast      bool // decodeToolResult takes it
}{
	{"one text block", `{"content":[{"type":"text","text":"This is a simple text response for testing."}]}`, true},
	{"of resultType complete", `{"content":[{"type":"text","text":"hi"}],"resultType":"complete"}`, true},
	{"a tool's failure", `{"content":[{"type":"text","text":"boom"}],"isError":true}`, true},
	{"no failure, said", `{"content":[{"type":"text","text":"fine <ok> & \u00e9"}],"isError":false}`, true},
	{"two blocks, escapes and white space", " {\"content\" : [{\"type\":\"text\",\"text\":\"a\\nb\\u00e9\\ud800\"}, {\"text\":\"\",\"type\":\"text\"}], \"isError\":false}\n", true},
	{"no content", `{}`, true},
	{"null content", `{"content":null}`, true},
	{"null text", `{"content":[{"type":"text","text":null}]}`, true},
	{"a null resultType", `{"content":[],"resultType":null}`, true},
	{"duplicate members", `{"isError":true,"isError":false,"content":[{"type":"text","text":"a"}],"content":[{"type":"text","text":"b"}]}`, true},
	{"invalid UTF-8 in text", "{\"content\":[{\"type\":\"text\",\"text\":\"a\xffb\"}]}", true},
	{"an image", `{"content":[{"type":"image","data":"AAAA","mimeType":"image/png"}]}`, false},
	{"a text block with _meta", `{"content":[{"type":"text","text":"a","_meta":{"k":1}}]}`, false},
	{"a text block with annotations", `{"content":[{"type":"text","text":"a","annotations":{"priority":1}}]}`, false},
	{"structuredContent", `{"content":[],"structuredContent":{"b":1,"a":2}}`, false},
	{"_meta", `{"content":[],"_meta":{"x":"y","n":[1.5,{"z":null}],"t":true}}`, true},
	{"a 2026-07-28 answer", `{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcp-conformance-test-server","version":"1.0.0"}},"content":[{"type":"text","text":"This is a simple text response for testing."}],"resultType":"complete"}`, true},
	{"a null _meta", `{"content":[],"_meta":null}`, true},
	{"a _meta not an object", `{"content":[],"_meta":[1]}`, false},
	{"input requests", `{"inputRequests":{"a":{"method":"elicitation/create","params":{}}},"resultType":"input_required"}`, false},
	{"another resultType", `{"content":[],"resultType":"input_required"}`, false},
	{"a name in other case", `{"Content":[{"type":"text","text":"a"}]}`, false},
	{"a null block", `{"content":[null]}`, false},
	{"a block of another type", `{"content":[{"type":"audio"}]}`, false},
	{"isError not a bool", `{"content":[],"isError":"true"}`, false},
	{"null", `null`, false},
	{"an array", `[]`, false},
}

// The results decodeToolResult takes are the SDK's, to the unexported
// field; what it does not take is left to the SDK.
func TestTheFastDecodingGivesTheSDKsResults(t *testing.T) {
	t.Parallel()
	for _, tc := range toolResultCases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := decodeToolResult([]byte(tc.raw))
			if ok != tc.fast {
				t.Fatalf("decodeToolResult(%s) took it: %v, want %v", tc.raw, ok, tc.fast)
			}
			if ok {
				checkSameAsSDK(t, []byte(tc.raw), got)
			}
		})
	}
}

// checkSameAsSDK holds tr to the SDK's decoding of raw, and the bytes it
// passes on to the SDK's result encoded again, less resultType and the
// server's name (as the bridge did before it kept the bytes).
func checkSameAsSDK(t *testing.T, raw []byte, tr *ToolResult) {
	t.Helper()
	want, err := sdkToolResult(raw)
	if err != nil {
		t.Fatalf("decodeToolResult took %q, which the SDK refuses: %v", raw, err)
	}
	got, err := tr.decoded()
	if err != nil {
		t.Fatalf("decoding the _meta of %q: %v", raw, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decodeToolResult(%q) = %#v, the SDK's %#v", raw, got, want)
	}
	if tr.whole == nil {
		return // encoded from the decoding, as before
	}
	meta := maps.Clone(want.Meta)
	delete(meta, mcp.MetaKeyServerInfo)
	if len(meta) == 0 {
		meta = nil
	}
	encoded, err := json.Marshal(&mcp.CallToolResult{Meta: meta, Content: want.Content, IsError: want.IsError})
	if err != nil {
		t.Fatal(err)
	}
	var g, w any
	if err := json.Unmarshal(tr.whole, &g); err != nil {
		t.Fatalf("the bytes passed on for %q are not JSON: %v\n%s", raw, err, tr.whole)
	}
	if err := json.Unmarshal(encoded, &w); err != nil {
		t.Fatal(err)
	}
	if m, ok := g.(map[string]any); ok && m["isError"] == false {
		delete(m, "isError") // as the server said it, where encoding leaves it out
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("passed on %s for %q, want (as JSON) %s", tr.whole, raw, encoded)
	}
}

func FuzzTheFastDecodingGivesTheSDKsResults(f *testing.F) {
	for _, tc := range toolResultCases {
		f.Add([]byte(tc.raw))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if deeperThan(raw, maxDepth) {
			return // refused by the line's decoding before it gets here
		}
		if got, ok := decodeToolResult(raw); ok {
			checkSameAsSDK(t, raw, got)
		}
	})
}

// Only the answer to a tools/call the connection sent comes back decoded;
// an answer to anything else, or one the SDK must decode, is as read.
func TestOnlyAnAnswerToAToolsCallComesBackDecoded(t *testing.T) {
	t.Parallel()
	const text = `{"content":[{"type":"text","text":"hi"}]}`
	answer := func(id int, result string) string {
		return `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"result":` + result + `}`
	}
	// The server reads the three requests, then answers each.
	script := "read a; read b; read c; printf '%s\\n' '" + answer(1, text) + "' '" + answer(2, text) + "' '" +
		answer(3, `{"content":[{"type":"image","data":"AAAA","mimeType":"image/png"}]}`) + "'; exec cat >/dev/null"
	cmd := exec.Command("/bin/sh", "-c", script)
	c, err := (&Transport{Command: cmd, TerminateDuration: shortGrace, DecodeToolResults: true}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	for _, req := range []*jsonrpc.Request{request(t, 1, "tools/call"), request(t, 2, "prompts/get"), request(t, 3, "tools/call")} {
		if err := c.Write(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	read := func() *jsonrpc.Response {
		t.Helper()
		msg, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return msg.(*jsonrpc.Response)
	}
	var tr *ToolResult
	if r := read(); !errors.As(r.Error, &tr) || tr.Result.Content[0].(*mcp.TextContent).Text != "hi" {
		t.Errorf("the tools/call's answer = %#v, want it decoded", r)
	}
	if r := read(); r.Error != nil || string(r.Result) != text {
		t.Errorf("the prompts/get's answer = %#v, want it as read", r)
	}
	if r := read(); r.Error != nil || !strings.Contains(string(r.Result), "image") {
		t.Errorf("the image's answer = %#v, want it as read, for the SDK", r)
	}
}
