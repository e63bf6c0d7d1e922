package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/gateway/mcpserve"
)

// The helpers of mcp_tasks_test.go: the worker and holder tool hosts, and
// the Tasks extension spoken by hand over HTTP.

// workerTools is the tools file of the "worker" tool host: slow writes its
// invocation's id to DIR/started and reports its progress as a local tool
// does, with stderr lines (halfway, 1/2; once DIR/next or DIR/go exists,
// nearly, 2/2), and finishes once DIR/go exists; sleeper runs until it is
// stopped (or DIR/go exists), and writes DIR/term when it hears SIGTERM.
const workerTools = `[
 {"name": "slow", "description": "Runs until told to finish.", "input_schema": {"type": "object"},
  "command": ["sh", "-c", "echo \"$SWITCHBOARD_INVOCATION\" > DIR/started.tmp; mv DIR/started.tmp DIR/started; echo '::progress:: 1/2 halfway' >&2; while [ ! -f DIR/next ] && [ ! -f DIR/go ]; do sleep 0.05; done; echo '::progress:: 2/2 nearly' >&2; while [ ! -f DIR/go ]; do sleep 0.05; done; echo done"]},
 {"name": "sleeper", "description": "Sleeps until stopped.", "input_schema": {"type": "object"},
  "command": ["sh", "-c", "trap 'echo term > DIR/term.tmp; mv DIR/term.tmp DIR/term; exit 143' TERM; touch DIR/sleeping; while [ ! -f DIR/go ]; do sleep 0.05; done"]}
]`

// serveWorker runs the worker tool host in the default workspace, its
// files in a directory of its own, which it returns.
func (s *suite) serveWorker(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	s.serveLocalHost(t, "worker", strings.ReplaceAll(workerTools, "DIR", dir))
	// Before the host stops (cleanups run last first): a test that failed
	// midway leaves no tool running for the host's stop to wait on.
	t.Cleanup(func() { _ = os.WriteFile(filepath.Join(dir, "go"), nil, 0o600) })
	s.join(t, "default", "worker")
	return dir
}

// waitFile waits for the file at path and returns its content.
func waitFile(t *testing.T, path string) string {
	t.Helper()
	var b []byte
	testkit.Eventually(t, path+" to be written", 20*time.Second, func() bool {
		var err error
		b, err = os.ReadFile(path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("reading %s: %v", path, err)
		}
		return err == nil
	})
	return strings.TrimSpace(string(b))
}

// taskMeta is a request's _meta declaring the Tasks extension.
func taskMeta() map[string]any {
	return map[string]any{"io.modelcontextprotocol/clientCapabilities": map[string]any{
		"extensions": map[string]any{mcpserve.TasksExtension: map[string]any{}}}}
}

// taskReply is a Task as the endpoint answers it.
type taskReply struct {
	ResultType     string    `json:"resultType"`
	TaskID         string    `json:"taskId"`
	Status         string    `json:"status"`
	StatusMessage  string    `json:"statusMessage"`
	CreatedAt      time.Time `json:"createdAt"`
	LastUpdatedAt  time.Time `json:"lastUpdatedAt"`
	TTLMs          *int64    `json:"ttlMs"`
	PollIntervalMs int64     `json:"pollIntervalMs"`
	InputRequests  map[string]struct {
		Method string         `json:"method"`
		Params map[string]any `json:"params"`
	} `json:"inputRequests"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
	Meta   map[string]any  `json:"_meta"`
}

func decodeTask(t *testing.T, what string, r rawMCPReply) taskReply {
	t.Helper()
	var tr taskReply
	if r.code != 0 || json.Unmarshal(r.result, &tr) != nil || tr.TaskID == "" {
		t.Fatalf("%s: HTTP %d, error %d %q, result %s", what, r.status, r.code, r.msg, r.result)
	}
	return tr
}

// startTask calls tool with the extension declared and returns its task
// (working, or already ended for a quick tool: the seed never carries
// the result).
func startTask(t *testing.T, c *rawMCPClient, tool string) taskReply {
	t.Helper()
	tr := decodeTask(t, "tools/call "+tool+" as a task", c.send(t, "tools/call",
		map[string]any{"name": tool, "arguments": map[string]any{}, "_meta": taskMeta()}, false))
	if tr.ResultType != "task" || !slices.Contains([]string{"working", "completed", "failed"}, tr.Status) || !strings.HasPrefix(tr.TaskID, "inv-") ||
		tr.TTLMs == nil || *tr.TTLMs <= 0 || (tr.Status == "working") != (tr.PollIntervalMs == 1000) || tr.CreatedAt.IsZero() || tr.Result != nil {
		t.Fatalf("tools/call %s as a task = %+v", tool, tr)
	}
	if c.rev >= "2026-07-28" && tr.Meta[mcp.MetaKeyServerInfo] == nil {
		t.Fatalf("tools/call %s as a task: no %s in _meta: %+v", tool, mcp.MetaKeyServerInfo, tr)
	}
	return tr
}

// getTask is tasks/get of id.
func getTask(t *testing.T, c *rawMCPClient, id string) taskReply {
	t.Helper()
	tr := decodeTask(t, "tasks/get "+id, c.send(t, "tasks/get", map[string]any{"taskId": id, "_meta": taskMeta()}, false))
	if tr.ResultType != "complete" || tr.TaskID != id {
		t.Fatalf("tasks/get %s = %+v", id, tr)
	}
	return tr
}

// awaitTask polls tasks/get of id until its status is no longer working.
func awaitTask(t *testing.T, c *rawMCPClient, id string) taskReply {
	t.Helper()
	var tr taskReply
	testkit.Eventually(t, "task "+id+" to end", 30*time.Second, func() bool {
		tr = getTask(t, c, id)
		return tr.Status != "working"
	})
	return tr
}

// answerTask answers task id's input requests with tasks/update and waits
// for the task to stop waiting and working.
func answerTask(t *testing.T, c *rawMCPClient, id string, answers, meta map[string]any) taskReply {
	t.Helper()
	if r := c.send(t, "tasks/update", map[string]any{"taskId": id, "inputResponses": answers, "_meta": meta}, false); r.code != 0 {
		t.Fatalf("tasks/update: HTTP %d, error %d %q", r.status, r.code, r.msg)
	}
	var done taskReply
	testkit.Eventually(t, "task "+id+" to end", 30*time.Second, func() bool {
		done = getTask(t, c, id)
		return done.Status != "working" && done.Status != "input_required"
	})
	return done
}

// awaitTaskNote polls tasks/get of id until its statusMessage is note (the
// tool's progress line has reached the mailbox).
func awaitTaskNote(t *testing.T, c *rawMCPClient, id, note string) taskReply {
	t.Helper()
	var tr taskReply
	testkit.Eventually(t, fmt.Sprintf("task %s to read %q", id, note), 30*time.Second, func() bool {
		tr = getTask(t, c, id)
		if tr.StatusMessage != note && tr.Status != "working" {
			t.Fatalf("task %s ended without reading %q: %+v", id, note, tr)
		}
		return tr.StatusMessage == note
	})
	return tr
}

// sameJSON fails unless a and b are the same JSON value.
func sameJSON(t *testing.T, what string, a, b json.RawMessage) {
	t.Helper()
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil || !reflect.DeepEqual(x, y) {
		t.Fatalf("%s:\n%s\nwant\n%s", what, a, b)
	}
}

func getTaskResult(t *testing.T, c *rawMCPClient, tool string) json.RawMessage {
	t.Helper()
	return awaitTask(t, c, startTask(t, c, tool).TaskID).Result
}

// withoutResultType is a synchronous result without what the stateless
// era adds to every result (its resultType, and the server's identity in
// _meta): a task's result is the call's result, and the tasks/get answer
// around it carries those.
func withoutResultType(t *testing.T, raw json.RawMessage) json.RawMessage {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "resultType")
	if meta, ok := m["_meta"].(map[string]any); ok {
		delete(meta, mcp.MetaKeyServerInfo)
		if len(meta) == 0 {
			delete(m, "_meta")
		}
	}
	out, _ := json.Marshal(m)
	return out
}

// tasks/cancel reaches a local tool that sleeps: it hears SIGTERM, and the
// task is cancelled.
// end ends the client's session (an HTTP DELETE), as a client that goes
// away does.
func (c *rawMCPClient) end(t *testing.T) {
	t.Helper()
	h := c.h.Clone()
	h.Set("Mcp-Session-Id", c.session)
	h.Set("Mcp-Protocol-Version", c.rev)
	if r := do(t, testkit.HTTP, http.MethodDelete, c.url, h, nil); r.Status >= 300 {
		t.Fatalf("ending session %s: %d %s", c.session, r.Status, r.Body)
	}
}

// holder is an MCP server (the Go SDK's, over Streamable HTTP on loopback)
// whose "hold" tool runs until its call is cancelled: it says when a call
// starts, and when one is cancelled (its context ends, which is how the SDK
// delivers notifications/cancelled to a handler).
type holder struct {
	started, cancelled chan struct{}
	// heard counts the notifications/cancelled the server received.
	heard chan struct{}
}

// mountHolder serves a holder and mounts it on the bridge as "up", a member
// of the default workspace.
func (s *suite) mountHolder(t *testing.T) *holder {
	t.Helper()
	h := &holder{started: make(chan struct{}, 4), cancelled: make(chan struct{}, 4), heard: make(chan struct{}, 4)}
	gone := make(chan struct{})
	server := mcp.NewServer(&mcp.Implementation{Name: "holder", Version: "1"}, nil)
	server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "notifications/cancelled" {
				h.heard <- struct{}{}
			}
			return next(ctx, method, req)
		}
	})
	server.AddTool(&mcp.Tool{Name: "hold", Description: "Runs until cancelled.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			h.started <- struct{}{}
			select {
			case <-ctx.Done():
				h.cancelled <- struct{}{}
				return nil, ctx.Err()
			case <-gone: // the test ended without a cancel
				return nil, errors.New("the test has ended")
			}
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	// The bridge holds a stream open: end it, or Close waits for it.
	t.Cleanup(func() { close(gone); srv.CloseClientConnections(); srv.Close() })
	st, err := s.bridge.Mount(opsCtx, &bridgev1.MountRequest{Client: "up", Config: &bridgev1.ServerConfig{
		Transport: &bridgev1.ServerConfig_Http{Http: &bridgev1.HttpTransport{Url: srv.URL}}}})
	if err != nil || st.GetServer().GetState() != bridgev1.State_STATE_RUNNING {
		t.Fatalf("Mount(up) = %v, %v", st, err)
	}
	s.join(t, "default", "up")
	return h
}
