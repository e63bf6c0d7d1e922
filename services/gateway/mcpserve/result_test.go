package mcpserve

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
)

// wire is a result as a client reads it.
func wire(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestACaptureBecomesTheResultAModelReads(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name            string
		stdout, stderr  string
		exit            int32
		hasOutputSchema bool
		want            string
	}{
		{"stdout is the text of a success", "hello\n", "", 0, false,
			`{"content":[{"type":"text","text":"hello\n"}]}`},
		{"a success with nothing printed has no content", "", "", 0, false,
			`{"content":[]}`},
		{"stderr of a success follows stdout, because the mailbox warns there", "done", "this invocation was handed to \"x\" 2 times", 0, false,
			`{"content":[{"type":"text","text":"done"},{"type":"text","text":"stderr:\nthis invocation was handed to \"x\" 2 times"}]}`},
		{"a non-zero exit is an error naming the code, then stderr, then stdout", "partial", "bad input", 3, false,
			`{"content":[{"type":"text","text":"exit code 3\nbad input"},{"type":"text","text":"partial"}],"isError":true}`},
		{"a failure without output still names its code", "", "", 124, false,
			`{"content":[{"type":"text","text":"exit code 124"}],"isError":true}`},
		{"a JSON object of a tool with an output schema is also structured content, its keys in their order", `{"z": 1, "a": 2}`, "", 0, true,
			`{"content":[{"type":"text","text":"{\"z\": 1, \"a\": 2}"}],"structuredContent":{"z":1,"a":2}}`},
		{"JSON that is not an object is text only", `[1]`, "", 0, true,
			`{"content":[{"type":"text","text":"[1]"}]}`},
		{"without an output schema JSON stays text", `{"n":1}`, "", 0, false,
			`{"content":[{"type":"text","text":"{\"n\":1}"}]}`},
		{"a failure is never structured", `{"n":1}`, "x", 1, true,
			`{"content":[{"type":"text","text":"exit code 1\nx"},{"type":"text","text":"{\"n\":1}"}],"isError":true}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := wire(t, fromCapture(capture.New(tt.stdout, tt.stderr, tt.exit), tt.hasOutputSchema))
			if got != tt.want {
				t.Errorf("result = %s\n  want   %s", got, tt.want)
			}
		})
	}
}

func TestARefusalIsAnErrorResultCarryingTheSentence(t *testing.T) {
	t.Parallel()
	got := wire(t, refusal(`client "laptop" advertises no tool "grep" right now`))
	if want := `{"content":[{"type":"text","text":"client \"laptop\" advertises no tool \"grep\" right now"}],"isError":true}`; got != want {
		t.Errorf("refusal = %s\nwant %s", got, want)
	}
}

// A capture carrying an MCP server's result is answered with that result:
// images and structured content intact, an error without the exit code;
// the mailbox's warning comes first and in _meta. One that does not decode
// is answered with its text.
func TestACapturedMCPResultIsAnsweredAsItWas(t *testing.T) {
	t.Parallel()
	const shot = `{"content":[{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}],"structuredContent":{"w":640},"_meta":{"k":"v"}}`
	const warning = `this invocation was handed to "b" 2 times; each hand-off may have run it`
	tests := []struct {
		name string
		c    *mailboxv1.Capture
		want string
	}{
		{"the server's result, whole", withResult(capture.New("[image content]", "", 0), shot, ""), shot},
		{"its error as it said it", withResult(capture.New("", "no such page", 1), `{"content":[{"type":"text","text":"no such page"}],"isError":true}`, ""),
			`{"content":[{"type":"text","text":"no such page"}],"isError":true}`},
		{"the warning first and in _meta", withResult(capture.New("[image content]", warning, 0), shot, warning),
			`{"_meta":{"k":"v","run.switchboard/warning":"` + strings.ReplaceAll(warning, `"`, `\"`) + `"},"content":[{"type":"text","text":"` + strings.ReplaceAll(warning, `"`, `\"`) +
				`"},{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}],"structuredContent":{"w":640}}`},
		{"a text capture's warning in _meta too", withResult(capture.New("ok", warning, 0), "", warning),
			`{"_meta":{"run.switchboard/warning":"` + strings.ReplaceAll(warning, `"`, `\"`) + `"},"content":[{"type":"text","text":"ok"},{"type":"text","text":"stderr:\n` + strings.ReplaceAll(warning, `"`, `\"`) + `"}]}`},
		{"what only the endpoint may say is dropped", withResult(capture.New("", "", 0),
			`{"content":[],"resultType":"input_required","inputRequests":{"a":{"method":"roots/list"}},"requestState":"s","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"evil"}}}`, ""),
			`{"content":[]}`},
		{"a result that does not decode gives way to the text", withResult(capture.New("[weird content]", "", 0), `{"content":[{"type":"weird"}]}`, ""),
			`{"content":[{"type":"text","text":"[weird content]"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := wire(t, fromCapture(tt.c, true)); !sameJSON(t, got, tt.want) {
				t.Errorf("result = %s\n  want   %s", got, tt.want)
			}
		})
	}
}

// sameJSON reports whether a and b are the same JSON value (the SDK orders
// a result's keys its own way).
func sameJSON(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		t.Fatalf("not JSON: %s or %s", a, b)
	}
	return reflect.DeepEqual(x, y)
}

func withResult(c *mailboxv1.Capture, result, warning string) *mailboxv1.Capture {
	if result != "" {
		c.McpResult = &result
	}
	if warning != "" {
		c.Warning = &warning
	}
	return c
}

// A refusal marked for the stateless era carries resultType "complete",
// and nothing else changes.
func TestACompletedRefusalCarriesItsResultType(t *testing.T) {
	t.Parallel()
	got := wire(t, completed(refusal("no such tool")))
	if want := `{"content":[{"type":"text","text":"no such tool"}],"isError":true,"resultType":"complete"}`; got != want {
		t.Errorf("completed refusal = %s\nwant %s", got, want)
	}
}
