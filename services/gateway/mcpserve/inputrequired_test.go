package mcpserve

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-run/switchboard/kit/suite/capture"
)

// A capture carrying a server's input_required result is answered with its
// requests and state, less the server's identity; any other capture, or
// one the mailbox warns of (its text says what happened), is not.
func TestAnInputRequiredCaptureIsAnsweredWithItsRequests(t *testing.T) {
	t.Parallel()
	const asked = `{"_meta":{"k":"v","io.modelcontextprotocol/serverInfo":{"name":"up"}},"content":[],` +
		`"inputRequests":{"q":{"method":"elicitation/create","params":{"message":"Name?","requestedSchema":{"type":"object"}}}},"requestState":"s-1"}`
	res := inputRequired(withResult(capture.New("", "asks", 1), asked, ""))
	if res == nil || len(res.InputRequests) != 1 || res.RequestState != "s-1" || res.Meta["k"] != "v" || res.Meta[mcp.MetaKeyServerInfo] != nil {
		t.Fatalf("inputRequired = %+v; want the request, its state and _meta less serverInfo", res)
	}
	if e, ok := res.InputRequests["q"].(*mcp.ElicitParams); !ok || e.Message != "Name?" {
		t.Fatalf("the request = %#v", res.InputRequests["q"])
	}
	for name, c := range map[string]string{
		"a plain result":              `{"content":[{"type":"text","text":"inputRequests"}]}`,
		"a result naming the word":    `{"content":[{"type":"text","text":"\"inputRequests\""}]}`,
		"an unknown request's method": `{"inputRequests":{"q":{"method":"tasks/get","params":{}}}}`,
	} {
		if res := inputRequired(withResult(capture.New("", "", 0), c, "")); res != nil {
			t.Errorf("%s: inputRequired = %+v; want none", name, res)
		}
	}
	if res := inputRequired(withResult(capture.New("", "asks", 1), asked, "handed out twice")); res != nil {
		t.Errorf("with the mailbox's warning: inputRequired = %+v; want none", res)
	}
}

// What a call passes on: the askable capabilities only, the log level
// asked for, the client's answers and state; nothing when there is none.
func TestACallsMCPParams(t *testing.T) {
	t.Parallel()
	caps := map[string]any{"roots": map[string]any{"listChanged": true}, "elicitation": map[string]any{}, "experimental": map[string]any{"x": 1}}
	for _, c := range []struct {
		name  string
		meta  mcp.Meta
		state string
		level mcp.LoggingLevel
		want  string
	}{
		{"nothing to pass on", mcp.Meta{mcp.MetaKeyClientCapabilities: map[string]any{"experimental": map[string]any{}}}, "", "", ""},
		{"what may be asked", mcp.Meta{mcp.MetaKeyClientCapabilities: caps}, "", "",
			`{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{},"roots":{"listChanged":true}}}}`},
		{"a retry asking for logs", nil, "s-1", "debug", `{"requestState":"s-1","_meta":{"io.modelcontextprotocol/logLevel":"debug"}}`},
	} {
		req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "t", Meta: c.meta, RequestState: c.state}}
		got, err := mcpParams(req, c.level, askNone)
		if err != nil || (got == nil) != (c.want == "") || (got != nil && *got != c.want) {
			t.Errorf("%s: mcpParams = %v, %v; want %s", c.name, got, err, c.want)
		}
	}
}
