package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/tests/internal/procs"
)

// MCP Tasks (docs/mcp.md, "Tasks") across restarts of the embedded suite:
// a task is the mailbox's invocation, kept in the durable store under
// --data, so stopping the suite — gracefully or with SIGKILL — and
// starting it again on the same --data loses none of it. The tool host is
// a real `switchboard host` running a shell tool that reports progress on
// stderr and finishes only when the test writes a file.

// taskTools is the tools file of the "worker" host: slow counts its runs
// in DIR/runs, writes its invocation's id to DIR/started, reports being
// halfway (a progress line on stderr), and finishes once DIR/go exists;
// sleeper runs until DIR/wake exists, and writes DIR/term when it hears
// SIGTERM.
const taskTools = `[
 {"name": "slow", "description": "Runs until told to finish.", "input_schema": {"type": "object"},
  "command": ["sh", "-c", "echo run >> DIR/runs; echo \"$SWITCHBOARD_INVOCATION\" > DIR/started.tmp; mv DIR/started.tmp DIR/started; echo '::progress:: 1/2 halfway' >&2; while [ ! -f DIR/go ]; do sleep 0.05; done; echo done"]},
 {"name": "sleeper", "description": "Sleeps until stopped.", "input_schema": {"type": "object"},
  "command": ["sh", "-c", "trap 'echo term > DIR/term.tmp; mv DIR/term.tmp DIR/term; exit 143' TERM; touch DIR/sleeping; while [ ! -f DIR/wake ]; do sleep 0.05; done"]}
]`

// A task under way is still working after a restart, with its progress
// note and its creation time; the host, which kept its run, redials and
// completes it; the completed task's result and a cancelled task's status
// read the same after another restart.
func TestTasksSurviveRestartsOfTheEmbeddedSuite(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		stop func(*procs.Dev)
	}{
		{"stopped with SIGTERM", func(d *procs.Dev) {
			if err := d.Proc.Stop(procs.StartTimeout); err != nil {
				t.Errorf("the suite's exit on SIGTERM: %v\n%s", err, d.Proc.Output())
			}
		}},
		{"killed", func(d *procs.Dev) { d.Proc.Kill() }},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d := procs.StartDev(t)
			dir := t.TempDir()
			host := d.Host(t, "worker", strings.ReplaceAll(taskTools, "DIR", dir))
			// Before the host stops (cleanups run last first): no tool is
			// left running for its stop to wait on.
			t.Cleanup(func() {
				for _, f := range []string{"go", "wake"} {
					_ = os.WriteFile(filepath.Join(dir, f), nil, 0o600)
				}
			})
			if _, err := d.Reg.RegisterClient(testkit.As("ops", identity.Admin), &registryv1.RegisterClientRequest{Workspace: "default", Client: "worker"}); err != nil {
				t.Fatal(err)
			}
			procs.WaitPresent(t, d.Reg, "worker", true, procs.StartTimeout)
			mcp := &taskClient{url: "http://" + d.HTTPAddr + "/mcp", dev: d}
			restart := func() {
				t.Helper()
				c.stop(d)
				d.Start()
			}

			// A task under way: working, with the tool's progress note.
			slow := mcp.start(t, "worker_slow")
			if inv := readFile(t, filepath.Join(dir, "started")); inv != slow {
				t.Fatalf("the task is %s, the tool runs invocation %s", slow, inv)
			}
			halfway := func(tr taskReply) bool { return tr.Status == "working" && tr.StatusMessage == "halfway (1/2)" }
			before := mcp.await(t, slow, "working, halfway", halfway)

			restart()
			after := mcp.await(t, slow, "still working, halfway, after the restart", func(tr taskReply) bool { return tr.Status != "" })
			if !halfway(after) || !after.CreatedAt.Equal(before.CreatedAt) {
				t.Fatalf("the task before the restart: %+v\nafter: %+v", before, after)
			}
			// The host redials and hands in the capture of the run it kept.
			if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			done := mcp.await(t, slow, "completed", func(tr taskReply) bool { return tr.Status != "working" })
			if done.Status != "completed" || !strings.Contains(string(done.Result), `"text":"done\n"`) {
				t.Fatalf("the finished task = %+v (result %s)\nthe host:\n%s", done, done.Result, host.Output())
			}

			if runs := readFile(t, filepath.Join(dir, "runs")); runs != "run" {
				t.Fatalf("the tool ran %d times: the host should keep its one run across the restart", strings.Count(runs, "run"))
			}

			// A task cancelled while it runs.
			sleeper := mcp.start(t, "worker_sleeper")
			waitFile(t, filepath.Join(dir, "sleeping"), "the sleeper to run")
			if r := mcp.send(t, "tasks/cancel", sleeper, nil); r.err != nil || string(r.result) != `{"resultType":"complete"}` {
				t.Fatalf("tasks/cancel %s = %s, %v", sleeper, r.result, r.err)
			}
			waitFile(t, filepath.Join(dir, "term"), "the sleeper to hear SIGTERM")
			cancelled := mcp.await(t, sleeper, "cancelled", func(tr taskReply) bool { return tr.Status != "working" })
			if cancelled.Status != "cancelled" || cancelled.Result != nil {
				t.Fatalf("the cancelled task = %+v", cancelled)
			}

			// Both read the same after another restart.
			restart()
			again := mcp.await(t, slow, "completed after the second restart", func(tr taskReply) bool { return tr.Status != "" })
			if again.Status != "completed" || !bytes.Equal(again.Result, done.Result) {
				t.Fatalf("the finished task after the restart: %+v (result %s); before: %s", again, again.Result, done.Result)
			}
			if got := mcp.get(t, sleeper); got.Status != "cancelled" || got.StatusMessage != cancelled.StatusMessage {
				t.Fatalf("the cancelled task after the restart: %+v; before: %+v", got, cancelled)
			}
		})
	}
}

// readFile waits for the file at path and returns its content.
func readFile(t *testing.T, path string) string {
	t.Helper()
	var b []byte
	testkit.Eventually(t, path+" to exist", 30*time.Second, func() bool {
		var err error
		b, err = os.ReadFile(path)
		return err == nil
	})
	return strings.TrimSpace(string(b))
}

// taskReply is a Task as the endpoint answers it.
type taskReply struct {
	ResultType    string          `json:"resultType"`
	TaskID        string          `json:"taskId"`
	Status        string          `json:"status"`
	StatusMessage string          `json:"statusMessage"`
	CreatedAt     time.Time       `json:"createdAt"`
	Result        json.RawMessage `json:"result"`
	InputRequests map[string]struct {
		Method string         `json:"method"`
		Params map[string]any `json:"params"`
	} `json:"inputRequests"`
}

// taskClient speaks the stateless era (2026-07-28) of MCP to the workspace
// endpoint by hand, as alice: the SDK's client has no Tasks.
type taskClient struct {
	url string
	dev *procs.Dev // whose current run's secret each request carries
	id  int
	// asks: the client declares it can be asked (elicitation), so a
	// mounted server's question makes its task input_required.
	asks bool
}

// rpcReply is a JSON-RPC answer: its result, or its error as err.
type rpcReply struct {
	result json.RawMessage
	err    error
}

// send posts one request about tool or task name, with params besides.
func (c *taskClient) send(t *testing.T, method, name string, params map[string]any) rpcReply {
	t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	key := "taskId"
	if method == "tools/call" {
		key = "name"
	}
	params[key] = name
	caps := map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}}
	if c.asks {
		caps["elicitation"] = map[string]any{}
	}
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "switchboard-faults", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": caps,
	}
	c.id++
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"},
		"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {method}, "Mcp-Name": {name},
		"Switchboard-Identity": {"alice"}, "Switchboard-Grade": {string(identity.Driver)}, "Switchboard-Dev-Secret": {c.dev.Secret}}
	res, err := testkit.HTTP.Do(req)
	if err != nil {
		return rpcReply{err: err}
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return rpcReply{err: err}
	}
	var r struct {
		Result json.RawMessage
		Error  *struct {
			Code    int
			Message string
		}
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return rpcReply{err: &answerError{res.StatusCode, string(raw)}}
	}
	if r.Error != nil {
		t.Fatalf("%s %s: error %d %q", method, name, r.Error.Code, r.Error.Message)
	}
	return rpcReply{result: r.Result}
}

// answerError is an HTTP answer that is no JSON-RPC answer (the suite
// still starting, say).
type answerError struct {
	status int
	body   string
}

func (e *answerError) Error() string { return http.StatusText(e.status) + ": " + e.body }

// start calls tool as a task and returns the task's id.
func (c *taskClient) start(t *testing.T, tool string) string {
	t.Helper()
	r := c.send(t, "tools/call", tool, map[string]any{"arguments": map[string]any{}})
	var tr taskReply
	if r.err != nil || json.Unmarshal(r.result, &tr) != nil || tr.ResultType != "task" || !strings.HasPrefix(tr.TaskID, "inv-") {
		t.Fatalf("tools/call %s as a task = %s, %v", tool, r.result, r.err)
	}
	return tr.TaskID
}

// get is tasks/get of id.
func (c *taskClient) get(t *testing.T, id string) taskReply {
	t.Helper()
	r := c.send(t, "tasks/get", id, nil)
	var tr taskReply
	if r.err != nil || json.Unmarshal(r.result, &tr) != nil || tr.TaskID != id || tr.ResultType != "complete" {
		t.Fatalf("tasks/get %s = %s, %v", id, r.result, r.err)
	}
	return tr
}

// await asks tasks/get of id until ok holds of the answer, and returns
// it; an endpoint not answering yet (the suite starting) is asked again.
func (c *taskClient) await(t *testing.T, id, what string, ok func(taskReply) bool) taskReply {
	t.Helper()
	var last taskReply
	testkit.Eventually(t, "task "+id+" "+what, 30*time.Second, func() bool {
		r := c.send(t, "tasks/get", id, nil)
		if r.err != nil {
			return false
		}
		if json.Unmarshal(r.result, &last) != nil || last.TaskID != id || last.ResultType != "complete" {
			t.Fatalf("tasks/get %s = %s", id, r.result)
		}
		return ok(last)
	})
	return last
}
