package run

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/switchboard-run/switchboard/services/host/internal/toolsfile"
)

// asker is a tool that asks twice on stderr and prints the answers it read
// on its answers descriptor; the ask lines stay out of its stderr.
const asker = `echo before >&2
echo '::ask:: {"key":"name","method":"elicitation/create","params":{"message":"Name?"}}' >&2
read -r a <&"$SWITCHBOARD_ANSWERS_FD"; echo "$a"
echo '::ask:: {"key":"model","method":"sampling/createMessage","params":{}}' >&2
read -r a <&"$SWITCHBOARD_ANSWERS_FD"; echo "$a"
echo '::ask:: {"key":"bad","method":"tools/call","params":{}}' >&2
read -r a <&"$SWITCHBOARD_ANSWERS_FD"; echo "$a"
echo after >&2`

// A local tool asks its driver with ::ask:: lines and reads each answer,
// or the driver's error, on fd 3; a driver that cannot be asked answers
// -32601 at once, a malformed ask -32602.
func TestAToolAsksItsDriverAndReadsTheAnswers(t *testing.T) {
	t.Parallel()
	script, _ := json.Marshal(asker)
	tools, err := toolsfile.Parse([]byte(`[{"name":"t","description":"","input_schema":{"type":"object"},"command":["sh","-c",`+
		string(script)+`]}]`), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var asked []string
	driver := func(_ context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, method+" "+string(params))
		if method == "sampling/createMessage" {
			return nil, &jsonrpc.Error{Code: -1, Message: "no model here"}
		}
		return json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`), nil
	}
	lim := Limits{Deadline: 20 * time.Second, Grace: time.Second, MaxOutput: 1 << 16}
	c := Run(t.Context(), &tools[0], Invocation{ID: "inv-1", Tool: "t", Input: "{}", Delivery: 1, Ask: driver}, lim)
	want := `{"key":"name","result":{"action":"accept","content":{"name":"Ada"}}}
{"key":"model","error":{"code":-1,"message":"no model here"}}
{"key":"bad","error":{"code":-32602,"message":"ask: method \"tools/call\" is not one a driver can be asked (elicitation/create, sampling/createMessage, roots/list)"}}
`
	if c.GetExitCode() != 0 || c.GetStdout() != want || c.GetStderr() != "before\nafter\n" {
		t.Fatalf("the tool's capture: exit %d\nstdout %s\nstderr %q", c.GetExitCode(), c.GetStdout(), c.GetStderr())
	}
	mu.Lock()
	if len(asked) != 2 || asked[0] != `elicitation/create {"message":"Name?"}` {
		t.Errorf("the driver was asked %q; want the two well-formed questions", asked)
	}
	mu.Unlock()

	c = Run(t.Context(), &tools[0], Invocation{ID: "inv-2", Tool: "t", Input: "{}", Delivery: 1}, lim)
	if !strings.HasPrefix(c.GetStdout(), `{"key":"name","error":{"code":-32601,"message":"elicitation/create: the call's agent cannot be asked`) {
		t.Errorf("a driver that cannot be asked: stdout %s", c.GetStdout())
	}
}
