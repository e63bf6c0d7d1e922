package mcpserve

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-run/switchboard/kit/capture"
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
