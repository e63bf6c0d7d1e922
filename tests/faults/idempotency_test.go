package faults

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/tests/internal/procs"
)

// A client whose gateway is killed (-9) while its tool runs retries through
// the other gateway with the same Idempotency-Key, on each front: a REST
// POST /v1/call, an MCP tools/call, and an act invoke. Each retry is
// answered with the first call's run — the same handle, the same capture —
// and a retry after the answer with the same again; the tool runs once per
// key. A key reused for another call is refused with a sentence.
func TestARetryWithItsIdempotencyKeyThroughTheOtherGatewayRunsTheToolOnce(t *testing.T) {
	t.Parallel()
	s := procs.NewSplit(t, procs.Options{})
	dir := t.TempDir()
	procs.Host(t, "worker", strings.ReplaceAll(slowTool, "DIR", dir), s.RegAddr, s.MailboxAddrs())
	s.WaitPresent("worker", true, procs.StartTimeout)
	if _, err := s.Reg.RegisterClient(testkit.As("ops", identity.Admin),
		&registryv1.RegisterClientRequest{Workspace: "default", Client: "worker"}); err != nil {
		t.Fatal(err)
	}
	addrA, addrB := testkit.FreeAddr(t), testkit.FreeAddr(t)
	gwA := s.Gateway(addrA, s.RegAddr)
	s.Gateway(addrB, s.RegAddr)
	a, b := "http://"+addrA, "http://"+addrB
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// Through A: a REST call and an MCP call, both left running, and an
	// invoke whose handle the client never read.
	restFirst := make(chan string, 1)
	go func() {
		restFirst <- keyedREST(ctx, a, "rest-1", `{"client":"worker","tool":"slow","input":"{\"n\":1}"}`)
	}()
	mcpFirst := make(chan string, 1)
	go func() { mcpFirst <- keyedMCP(ctx, a, "mcp-1", map[string]any{"n": 2}) }()
	invoked := keyedAct(t, a, "act-1", `{"n":3}`)
	runs := filepath.Join(dir, "runs")
	testkit.Eventually(t, "the REST and MCP calls to run", procs.StartTimeout, func() bool {
		ran, _ := os.ReadFile(runs)
		return strings.Count(string(ran), "run") >= 2
	})
	gwA.Kill()
	t.Logf("gateway A killed: REST answered %q, MCP %q", receive(t, restFirst, "the REST call to break"), receive(t, mcpFirst, "the MCP call to break"))

	// The retries through B wait for the same runs.
	restRetry := make(chan string, 1)
	go func() {
		restRetry <- keyedREST(ctx, b, "rest-1", `{"client":"worker","tool":"slow","input":"{\"n\":1}"}`)
	}()
	mcpRetry := make(chan string, 1)
	go func() { mcpRetry <- keyedMCP(ctx, b, "mcp-1", map[string]any{"n": 2}) }()
	if again := keyedAct(t, b, "act-1", `{"n":3}`); again != invoked {
		t.Fatalf("the invoke retried through B = %s; want the first handle %s", again, invoked)
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rest := receive(t, restRetry, "the REST retry's answer")
	mcpText := receive(t, mcpRetry, "the MCP retry's answer")
	if !strings.HasPrefix(rest, "200 ") || !strings.Contains(rest, `"stdout":"done\n"`) {
		t.Errorf("the REST retry answered %s; want 200 and the run's capture", rest)
	}
	if mcpText != "done\n" {
		t.Errorf("the MCP retry answered %q; want the run's output", mcpText)
	}
	if c := actCapture(t, b, invoked); !strings.Contains(c, `"stdout":"done\n"`) {
		t.Errorf("collecting the invoke %s answered %s", invoked, c)
	}

	// Answered: a retry gets the same, and nothing runs.
	if again := keyedREST(ctx, b, "rest-1", `{"client":"worker","tool":"slow","input":"{\"n\":1}"}`); again != rest {
		t.Errorf("a REST retry after the answer = %s; want %s again", again, rest)
	}
	if again := keyedMCP(ctx, b, "mcp-1", map[string]any{"n": 2}); again != mcpText {
		t.Errorf("an MCP retry after the answer = %q; want %q again", again, mcpText)
	}
	if n := countRuns(t, runs); n != 3 {
		t.Errorf("the tool ran %d times for three keys; want three", n)
	}

	// A key names one call.
	if other := keyedREST(ctx, b, "rest-1", `{"client":"worker","tool":"slow","input":"{\"n\":9}"}`); !strings.HasPrefix(other, "409 ") ||
		!strings.Contains(other, `idempotency key \"rest-1\" named another call`) {
		t.Errorf("the key reused for other input answered %s; want 409 and the sentence", other)
	}
	if bad := keyedREST(ctx, b, "two words", `{"client":"worker","tool":"slow","input":"{}"}`); !strings.HasPrefix(bad, "400 ") ||
		!strings.Contains(bad, `is not visible ASCII`) {
		t.Errorf("a key with a space answered %s; want 400 and the sentence", bad)
	}
}

// keyedREST is restCall with an Idempotency-Key.
func keyedREST(ctx context.Context, base, key, body string) string {
	return restCallWith(ctx, base, http.Header{"Idempotency-Key": {key}}, body)
}

// keyedMCP calls worker_slow with args in a new stateless-era session on
// the gateway at base, its requests carrying the Idempotency-Key key, and
// returns the result's text or the error.
func keyedMCP(ctx context.Context, base, key string, args map[string]any) string {
	header := asDriver.Clone()
	header.Set("Idempotency-Key", key)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "switchboard-tests", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: testkit.HeaderClient(header), MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		return "error: " + err.Error()
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "worker_slow", Arguments: args})
	switch {
	case err != nil:
		return "error: " + err.Error()
	case res.IsError:
		return "isError: " + procs.Texts(res)
	}
	return procs.Texts(res)
}

// keyedAct posts an act invoke of worker_slow with input and the
// idempotency_key key, and returns the handle.
func keyedAct(t *testing.T, base, key, input string) string {
	t.Helper()
	res := driverRequest(t, http.MethodPost, base+"/v1/act", `{"op":"invoke","client":"worker","tool":"slow","input":`+input+`,"idempotency_key":"`+key+`"}`)
	var routed struct{ Invocation string }
	body, ok := strings.CutPrefix(res, "200 ")
	if !ok || json.Unmarshal([]byte(body), &routed) != nil || routed.Invocation == "" {
		t.Fatalf("the keyed invoke answered %s", res)
	}
	return routed.Invocation
}

// actCapture collects invocation id through the act at base.
func actCapture(t *testing.T, base, id string) string {
	t.Helper()
	return driverRequest(t, http.MethodPost, base+"/v1/act", `{"op":"capture","invocation":"`+id+`","wait":"60s"}`)
}

func countRuns(t *testing.T, path string) int {
	t.Helper()
	ran, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(ran), "run")
}
