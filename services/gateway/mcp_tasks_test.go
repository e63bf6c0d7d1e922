package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/proto"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/identity"
	"github.com/switchboard-run/switchboard/services/gateway/mcpserve"
)

// The Tasks extension on the workspace endpoint (docs/mcp.md, "Tasks"),
// spoken by hand over HTTP: the SDK's client has no Tasks.

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
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if err == nil {
			return strings.TrimSpace(string(b))
		}
		if !errors.Is(err, os.ErrNotExist) || time.Now().After(deadline) {
			t.Fatalf("waiting for %s: %v", path, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// taskMeta is a request's _meta declaring the Tasks extension.
func taskMeta() map[string]any {
	return map[string]any{"io.modelcontextprotocol/clientCapabilities": map[string]any{
		"extensions": map[string]any{mcpserve.TasksExtension: map[string]any{}}}}
}

// taskReply is a Task as the endpoint answers it.
type taskReply struct {
	ResultType     string          `json:"resultType"`
	TaskID         string          `json:"taskId"`
	Status         string          `json:"status"`
	StatusMessage  string          `json:"statusMessage"`
	CreatedAt      time.Time       `json:"createdAt"`
	LastUpdatedAt  time.Time       `json:"lastUpdatedAt"`
	TTLMs          *int64          `json:"ttlMs"`
	PollIntervalMs int64           `json:"pollIntervalMs"`
	Result         json.RawMessage `json:"result"`
	Meta           map[string]any  `json:"_meta"`
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
// (working, or already completed for a quick tool: the seed never carries
// the result).
func startTask(t *testing.T, c *rawMCPClient, tool string) taskReply {
	t.Helper()
	tr := decodeTask(t, "tools/call "+tool+" as a task", c.send(t, "tools/call",
		map[string]any{"name": tool, "arguments": map[string]any{}, "_meta": taskMeta()}, false))
	if tr.ResultType != "task" || (tr.Status != "working" && tr.Status != "completed") || !strings.HasPrefix(tr.TaskID, "inv-") ||
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
	tr := decodeTask(t, "tasks/get "+id, c.send(t, "tasks/get", map[string]any{"taskId": id}, false))
	if tr.ResultType != "complete" || tr.TaskID != id {
		t.Fatalf("tasks/get %s = %+v", id, tr)
	}
	return tr
}

// awaitTask polls tasks/get of id until its status is no longer working.
func awaitTask(t *testing.T, c *rawMCPClient, id string) taskReply {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		tr := getTask(t, c, id)
		if tr.Status != "working" {
			return tr
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s is still working: %+v", id, tr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// awaitTaskNote polls tasks/get of id until its statusMessage is note (the
// tool's progress line has reached the mailbox).
func awaitTaskNote(t *testing.T, c *rawMCPClient, id, note string) taskReply {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		tr := getTask(t, c, id)
		if tr.StatusMessage == note {
			return tr
		}
		if tr.Status != "working" || time.Now().After(deadline) {
			t.Fatalf("task %s never read %q: %+v", id, note, tr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// sameJSON fails unless a and b are the same JSON value.
func sameJSON(t *testing.T, what string, a, b json.RawMessage) {
	t.Helper()
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil || !reflect.DeepEqual(x, y) {
		t.Fatalf("%s:\n%s\nwant\n%s", what, a, b)
	}
}

// A task outlives its client and the gateway that created it: started on
// one gateway, it is read on another — working, with the progress so far —
// and then completed, with the result a synchronous call of the same tool
// gets. Only its creator sees it: anyone else gets the answer of a task
// that does not exist.
func TestATaskOutlivesItsClientAndItsGateway(t *testing.T) {
	t.Parallel()
	forEachRevision(t, func(t *testing.T, rev string) {
		s := newSuite(t, options{laptop: true})
		dir := s.serveWorker(t)
		other := serveGatewayReplica(t, s.Addr)

		first := s.rawMCPSession(t, rev)
		created := startTask(t, first, "worker_slow")
		id := created.TaskID
		if created.Status != "working" {
			t.Fatalf("a tool waiting for its go-ahead is %s", created.Status)
		}
		if inv := waitFile(t, filepath.Join(dir, "started")); inv != id {
			t.Fatalf("the task is %s, the tool runs invocation %s", id, inv)
		}
		// The client goes away: a session's end changes nothing of the task.
		if first.session != "" {
			first.end(t)
		}

		// The tool says how far it has got, and the task shows it wherever
		// it is read.
		elsewhere := &rawMCPClient{url: other + "/mcp", rev: rev, h: as("alice", identity.Driver)}
		if rev < "2026-07-28" {
			elsewhere = (&suite{URL: other}).rawMCPSession(t, rev)
		}
		running := awaitTaskNote(t, elsewhere, id, "halfway (1/2)")
		progress, _ := running.Meta[mcpserve.MetaProgress].(map[string]any)
		if running.Status != "working" || progress["message"] != "halfway" ||
			progress["progress"] != 1.0 || progress["total"] != 2.0 || !running.CreatedAt.Equal(created.CreatedAt) {
			t.Fatalf("tasks/get on the other gateway = %+v", running)
		}

		// Bob gets what a task that never existed gets.
		bob := &rawMCPClient{url: other + "/mcp", rev: rev, h: as("bob", identity.Driver)}
		if rev < "2026-07-28" {
			bob = (&suite{URL: other}).rawMCPSessionAs(t, rev, "bob")
		}
		const never = "inv-00000000000000000000000000000000"
		for _, method := range []string{"tasks/get", "tasks/cancel", "tasks/update"} {
			theirs := bob.send(t, method, map[string]any{"taskId": id}, false)
			none := bob.send(t, method, map[string]any{"taskId": never}, false)
			if theirs.code != -32602 || theirs.result != nil || strings.ReplaceAll(theirs.msg, id, never) != none.msg || none.code != -32602 {
				t.Fatalf("bob's %s of alice's task: %d %q %s; of no task: %d %q", method, theirs.code, theirs.msg, theirs.result, none.code, none.msg)
			}
		}
		// No input is ever asked of the client.
		if r := elsewhere.send(t, "tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{"x": map[string]any{}}}, false); r.code != -32602 ||
			!strings.Contains(r.msg, "asks for no input") {
			t.Fatalf("tasks/update = %d %q %s", r.code, r.msg, r.result)
		}

		if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		done := awaitTask(t, elsewhere, id)
		if done.Status != "completed" || done.PollIntervalMs != 0 {
			t.Fatalf("the finished task = %+v", done)
		}
		// The result is what the same call gets synchronously, and it can
		// be read again.
		sync := elsewhere.send(t, "tools/call", map[string]any{"name": "worker_slow", "arguments": map[string]any{}}, false)
		if sync.code != 0 || !strings.Contains(string(sync.result), `"done\n"`) {
			t.Fatalf("the synchronous call: %d %q %s", sync.code, sync.msg, sync.result)
		}
		sameJSON(t, "the task's result", done.Result, withoutResultType(t, sync.result))
		sameJSON(t, "the task's result read again", getTask(t, first, id).Result, done.Result)
	})
}

// A tool with an output schema: the task's result carries the same
// structuredContent as the synchronous call's. A group's endpoint runs its
// tools as tasks too, under the names it presents.
func TestATasksResultIsTheSynchronousCallsResult(t *testing.T) {
	t.Parallel()
	s := newSuite(t, options{laptop: true})
	s.setGroup(t, &registryv1.Group{Workspace: "default", Name: "ro", Patterns: []string{"laptop_stats"},
		Overrides: []*registryv1.ToolOverride{{Tool: "laptop_stats", Alias: proto.String("stats")}}})
	c := s.rawMCPSession(t, "2026-07-28")
	for _, tool := range []string{"laptop_stats", "laptop_fail"} {
		done := awaitTask(t, c, startTask(t, c, tool).TaskID)
		sync := c.send(t, "tools/call", map[string]any{"name": tool, "arguments": map[string]any{}}, false)
		if done.Status != "completed" || sync.code != 0 {
			t.Fatalf("%s: the task %+v, the call %d %q", tool, done, sync.code, sync.msg)
		}
		sameJSON(t, tool+": the task's result", done.Result, withoutResultType(t, sync.result))
	}
	if !strings.Contains(string(getTaskResult(t, c, "laptop_stats")), `"structuredContent":{"files":3}`) {
		t.Fatal("laptop_stats's task has no structuredContent")
	}
	// A name the workspace does not present is refused as a synchronous
	// call is, with no task.
	r := c.send(t, "tools/call", map[string]any{"name": "laptop_nope", "arguments": map[string]any{}, "_meta": taskMeta()}, false)
	if r.code != 0 || strings.Contains(string(r.result), "taskId") || !strings.Contains(string(r.result), `no tool is presented as \"laptop_nope\"`) {
		t.Fatalf("a task of an unknown tool: %d %q %s", r.code, r.msg, r.result)
	}
	g := &rawMCPClient{url: s.URL + "/mcp/default/ro", rev: "2026-07-28", h: as("alice", identity.Driver)}
	if got := getTaskResult(t, g, "stats"); !strings.Contains(string(got), `"structuredContent":{"files":3}`) {
		t.Fatalf("the group's stats task: %s", got)
	}
	r = g.send(t, "tools/call", map[string]any{"name": "laptop_cat", "arguments": map[string]any{}, "_meta": taskMeta()}, false)
	if r.code != 0 || strings.Contains(string(r.result), "taskId") || !strings.Contains(string(r.result), `no tool is presented as \"laptop_cat\"`) {
		t.Fatalf("a task of a tool outside the group: %d %q %s", r.code, r.msg, r.result)
	}
	// Without the extension declared, a call is never a task.
	if r := c.send(t, "tools/call", map[string]any{"name": "laptop_stats", "arguments": map[string]any{}}, false); strings.Contains(string(r.result), "taskId") {
		t.Fatalf("a call without the extension got a task: %s", r.result)
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
func TestCancellingATaskStopsALocalTool(t *testing.T) {
	t.Parallel()
	forEachRevision(t, func(t *testing.T, rev string) {
		s := newSuite(t, options{})
		dir := s.serveWorker(t)
		c := s.rawMCPSession(t, rev)
		id := startTask(t, c, "worker_sleeper").TaskID
		waitFile(t, filepath.Join(dir, "sleeping"))
		if r := c.send(t, "tasks/cancel", map[string]any{"taskId": id}, false); r.code != 0 || string(r.result) != `{"resultType":"complete"}` {
			t.Fatalf("tasks/cancel = %d %q %s", r.code, r.msg, r.result)
		}
		if got := waitFile(t, filepath.Join(dir, "term")); got != "term" {
			t.Fatalf("the tool wrote %q", got)
		}
		tr := getTask(t, c, id)
		if tr.Status != "cancelled" || !strings.Contains(tr.StatusMessage, "tasks/cancel") || tr.Result != nil {
			t.Fatalf("the cancelled task = %+v", tr)
		}
	})
}

// tasks/cancel reaches a mounted MCP server: it hears notifications/cancelled.
func TestCancellingATaskCancelsItUpstream(t *testing.T) {
	t.Parallel()
	s := newSuite(t, options{})
	up := s.mountHolder(t)
	c := s.rawMCPSession(t, "2026-07-28")
	id := startTask(t, c, "up_hold").TaskID
	within(t, up.started, 30*time.Second, "the upstream server to run the call")
	if r := c.send(t, "tasks/cancel", map[string]any{"taskId": id}, false); r.code != 0 {
		t.Fatalf("tasks/cancel = %d %q", r.code, r.msg)
	}
	within(t, up.heard, 30*time.Second, "the upstream server to receive notifications/cancelled")
	within(t, up.cancelled, 30*time.Second, "the upstream call to end")
	if tr := getTask(t, c, id); tr.Status != "cancelled" {
		t.Fatalf("the cancelled task = %+v", tr)
	}
}

// A synchronous tools/call that names a progressToken hears the host's
// progress as notifications/progress, in both eras (the SDK's client); the
// server's capabilities name the Tasks extension.
func TestASyncCallHearsItsProgress(t *testing.T) {
	t.Parallel()
	forEachRevision(t, func(t *testing.T, rev string) {
		s := newSuite(t, options{})
		dir := s.serveWorker(t)
		heard := make(chan *mcp.ProgressNotificationParams, 16)
		cs := s.connectAt(t, rev, "/mcp", as("alice", identity.Driver), &mcp.ClientOptions{
			ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) { heard <- req.Params }})
		// The server names the Tasks extension in its capabilities: in
		// server/discover's answer, and in initialize's with a session.
		if _, ok := cs.InitializeResult().Capabilities.Extensions[mcpserve.TasksExtension]; !ok {
			t.Fatalf("the server's capabilities name no Tasks extension: %+v", cs.InitializeResult().Capabilities)
		}
		type answer struct {
			res *mcp.CallToolResult
			err error
		}
		ended := make(chan answer, 1)
		go func() {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "worker_slow", Arguments: map[string]any{},
				Meta: mcp.Meta{"progressToken": "tok-7"}})
			ended <- answer{res, err}
		}()
		waitFile(t, filepath.Join(dir, "started"))
		// The tool's progress lines, each heard before the next is written.
		for i, msg := range []string{"halfway", "nearly"} {
			if i > 0 {
				if err := os.WriteFile(filepath.Join(dir, "next"), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			p := within(t, heard, 30*time.Second, "notifications/progress "+msg)
			if p.ProgressToken != "tok-7" || p.Progress != float64(i+1) || p.Total != 2 || p.Message != msg {
				t.Fatalf("notifications/progress = %+v", p)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		a := within(t, ended, 30*time.Second, "the call's result")
		if a.err != nil || a.res.IsError || texts(a.res)[0] != "done\n" {
			t.Fatalf("the call: %v, %v", a.res, a.err)
		}
	})
}

// end ends the client's session (an HTTP DELETE), as a client that goes
// away does.
func (c *rawMCPClient) end(t *testing.T) {
	t.Helper()
	h := c.h.Clone()
	h.Set("Mcp-Session-Id", c.session)
	h.Set("Mcp-Protocol-Version", c.rev)
	if r := do(t, http.DefaultClient, http.MethodDelete, c.url, h, nil); r.Status >= 300 {
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
