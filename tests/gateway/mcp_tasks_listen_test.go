package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// listenMessage is one JSON-RPC message on a subscriptions/listen stream.
type listenMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// listenTasks opens a stateless subscriptions/listen as name for taskIds
// (meta: its _meta) and returns the HTTP status and the stream's messages,
// in order, on a channel closed when the stream ends.
func listenTasks(t *testing.T, url, name string, taskIDs []string, meta map[string]any) (int, <-chan listenMessage) {
	t.Helper()
	meta["io.modelcontextprotocol/protocolVersion"] = "2026-07-28"
	meta["io.modelcontextprotocol/clientInfo"] = map[string]any{"name": "switchboard-test", "version": "1"}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen",
		"params": map[string]any{"_meta": meta, "notifications": map[string]any{"taskIds": taskIDs}}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = as(name, identity.Driver)
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "subscriptions/listen"} {
		req.Header.Set(k, v)
	}
	resp, err := testkit.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	msgs := make(chan listenMessage, 64)
	go func() {
		defer close(msgs)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if d, ok := strings.CutPrefix(line, "data:"); ok {
				var m listenMessage
				if json.Unmarshal([]byte(d), &m) == nil {
					msgs <- m
				}
			} else if strings.HasPrefix(line, "{") { // a plain JSON answer (a refusal)
				var m listenMessage
				if json.Unmarshal([]byte(line), &m) == nil {
					msgs <- m
				}
			}
		}
	}()
	return resp.StatusCode, msgs
}

func nextListen(t *testing.T, msgs <-chan listenMessage, what string) listenMessage {
	t.Helper()
	select {
	case m, ok := <-msgs:
		if !ok {
			t.Fatalf("the listen stream ended before %s", what)
		}
		return m
	case <-time.After(30 * time.Second):
		t.Fatalf("no %s on the listen stream", what)
		return listenMessage{}
	}
}

// A subscriptions/listen naming taskIds hears each change of the caller's
// tasks as notifications/tasks, the task as tasks/get shows it, and ends
// with its result once they have ended; another's task is left out of the
// acknowledgement, and a listen without the extension is refused.
func TestAListenHearsItsTasksChange(t *testing.T) {
	t.Parallel()
	s := newSuite(t, options{laptop: true})
	dir := s.serveWorker(t)
	alice := s.rawMCPSession(t, "2026-07-28")
	id := startTask(t, alice, "worker_slow").TaskID
	waitFile(t, filepath.Join(dir, "started"))

	if code, msgs := listenTasks(t, s.URL+"/mcp", "alice", []string{id}, map[string]any{}); code != http.StatusBadRequest {
		t.Fatalf("a listen for tasks without the extension: HTTP %d", code)
	} else if m := nextListen(t, msgs, "the refusal"); m.Error == nil || m.Error.Code != mcp.CodeMissingRequiredClientCapabilities || !strings.Contains(m.Error.Message, "taskIds") {
		t.Fatalf("a listen for tasks without the extension = %d %q, want the missing capability named", m.Error.Code, m.Error.Message)
	}

	// Bob may not follow alice's task: acknowledged with none, and over.
	_, bobs := listenTasks(t, s.URL+"/mcp", "bob", []string{id}, taskMeta())
	if m := nextListen(t, bobs, "bob's acknowledgement"); m.Method != "notifications/subscriptions/acknowledged" || !strings.Contains(string(m.Params), `"taskIds":[]`) {
		t.Fatalf("bob's acknowledgement = %s %s", m.Method, m.Params)
	}
	if m := nextListen(t, bobs, "bob's result"); string(m.ID) != "7" || m.Result == nil {
		t.Fatalf("bob's listen, following nothing, ended with %+v", m)
	}

	const never = "inv-00000000000000000000000000000000"
	code, msgs := listenTasks(t, s.URL+"/mcp", "alice", []string{id, never, id}, taskMeta())
	if code != http.StatusOK {
		t.Fatalf("alice's listen: HTTP %d", code)
	}
	var ack struct {
		Notifications struct{ TaskIDs []string } `json:"notifications"`
	}
	if m := nextListen(t, msgs, "the acknowledgement"); m.Method != "notifications/subscriptions/acknowledged" ||
		json.Unmarshal(m.Params, &ack) != nil || !slices.Equal(ack.Notifications.TaskIDs, []string{id}) {
		t.Fatalf("the acknowledgement = %s %s, want taskIds [%s]", m.Method, m.Params, id)
	}
	pushed := func(what string) taskReply {
		t.Helper()
		m := nextListen(t, msgs, what)
		var tr taskReply
		if m.Method != "notifications/tasks" || json.Unmarshal(m.Params, &tr) != nil || tr.TaskID != id {
			t.Fatalf("%s: %s %s", what, m.Method, m.Params)
		}
		return tr
	}
	tr := pushed("the task as it is")
	if tr.Status != "working" {
		t.Fatalf("the first push = %+v", tr)
	}
	for tr.StatusMessage != "halfway (1/2)" { // the tool's first note may come after the listen began
		tr = pushed("the halfway note")
	}
	if err := os.WriteFile(filepath.Join(dir, "next"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if tr := pushed("the next note"); tr.Status != "working" || tr.StatusMessage != "nearly (2/2)" {
		t.Fatalf("after the second note: %+v", tr)
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	done := pushed("the end")
	if done.Status != "completed" {
		t.Fatalf("the last push = %+v", done)
	}
	sameJSON(t, "the pushed result", done.Result, getTask(t, alice, id).Result)
	if m := nextListen(t, msgs, "the listen's result"); string(m.ID) != "7" || !strings.Contains(string(m.Result), `"resultType":"complete"`) {
		t.Fatalf("the listen ended with %+v", m)
	}
}
