package gateway_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/proto"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/gateway/mcpserve"
)

// The Tasks extension on the workspace endpoint (docs/mcp.md, "Tasks"),
// spoken by hand over HTTP: the SDK's client has no Tasks.

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
			theirs := bob.send(t, method, map[string]any{"taskId": id, "_meta": taskMeta()}, false)
			none := bob.send(t, method, map[string]any{"taskId": never, "_meta": taskMeta()}, false)
			if theirs.code != -32602 || theirs.result != nil || strings.ReplaceAll(theirs.msg, id, never) != none.msg || none.code != -32602 {
				t.Fatalf("bob's %s of alice's task: %d %q %s; of no task: %d %q", method, theirs.code, theirs.msg, theirs.result, none.code, none.msg)
			}
		}
		// An answer to no question waiting is ignored, as the extension asks.
		if r := elsewhere.send(t, "tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{"x": map[string]any{}}, "_meta": taskMeta()}, false); r.code != 0 ||
			!strings.Contains(string(r.result), `"resultType":"complete"`) {
			t.Fatalf("tasks/update = %d %q %s; want the acknowledgement", r.code, r.msg, r.result)
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

// TestTheExtensionsMethodsNeedItDeclared: tasks/* in a request whose _meta
// does not declare the extension are refused -32021, naming it in data;
// the stateless era answers that and an unknown task with status 400.
func TestTheExtensionsMethodsNeedItDeclared(t *testing.T) {
	t.Parallel()
	s := newSuite(t, options{laptop: true})
	forEachRevision(t, func(t *testing.T, rev string) {
		c := s.rawMCPSession(t, rev)
		id := startTask(t, c, "laptop_stats").TaskID
		bad := http.StatusOK
		if rev >= "2026-07-28" {
			bad = http.StatusBadRequest
		}
		for _, method := range []string{"tasks/get", "tasks/cancel", "tasks/update"} {
			r := c.send(t, method, map[string]any{"taskId": id}, false)
			if r.code != -32021 || r.status != bad || string(r.data) != `{"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}` ||
				!strings.HasPrefix(r.msg, method+" is a method of the Tasks extension (io.modelcontextprotocol/tasks)") {
				t.Fatalf("%s without the extension: HTTP %d, %d %q %s; want %d, -32021 with the extension in data", method, r.status, r.code, r.msg, r.data, bad)
			}
		}
		if r := c.send(t, "tasks/get", map[string]any{"taskId": "inv-00000000000000000000000000000000", "_meta": taskMeta()}, false); r.code != -32602 || r.status != bad {
			t.Fatalf("tasks/get of no task: HTTP %d, %d %q; want %d, -32602", r.status, r.code, r.msg, bad)
		}
		if done := awaitTask(t, c, id); done.Status != "completed" {
			t.Fatalf("the task, asked with the extension declared: %+v", done)
		}
	})
}

func TestCancellingATaskStopsALocalTool(t *testing.T) {
	t.Parallel()
	forEachRevision(t, func(t *testing.T, rev string) {
		s := newSuite(t, options{})
		dir := s.serveWorker(t)
		c := s.rawMCPSession(t, rev)
		id := startTask(t, c, "worker_sleeper").TaskID
		waitFile(t, filepath.Join(dir, "sleeping"))
		if r := c.send(t, "tasks/cancel", map[string]any{"taskId": id, "_meta": taskMeta()}, false); r.code != 0 || string(r.result) != `{"resultType":"complete"}` {
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
	testkit.Receive(t, up.started, 30*time.Second, "the upstream server to run the call")
	if r := c.send(t, "tasks/cancel", map[string]any{"taskId": id, "_meta": taskMeta()}, false); r.code != 0 {
		t.Fatalf("tasks/cancel = %d %q", r.code, r.msg)
	}
	testkit.Receive(t, up.heard, 30*time.Second, "the upstream server to receive notifications/cancelled")
	testkit.Receive(t, up.cancelled, 30*time.Second, "the upstream call to end")
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
			p := testkit.Receive(t, heard, 30*time.Second, "notifications/progress "+msg)
			if p.ProgressToken != "tok-7" || p.Progress != float64(i+1) || p.Total != 2 || p.Message != msg {
				t.Fatalf("notifications/progress = %+v", p)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		a := testkit.Receive(t, ended, 30*time.Second, "the call's result")
		if a.err != nil || a.res.IsError || texts(a.res)[0] != "done\n" {
			t.Fatalf("the call: %v, %v", a.res, a.err)
		}
	})
}
