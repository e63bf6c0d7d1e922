package faults

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/tests/internal/procs"
)

// fixturesPkg is the conformance suite's Tasks fixtures: an MCP server
// over stdio whose confirm_delete asks its client before it answers.
const fixturesPkg = procs.Module + "tests/conformance/testdata/taskfixtures"

// A mounted server's question keeps its task input_required across kill -9
// of the whole suite: the new run asks again, under a new key, and the
// client's answer to that reaches the server and the task completes.
func TestATaskWaitingForAnAnswerOutlivesKillingTheSuite(t *testing.T) {
	t.Parallel()
	d := procs.StartDev(t)
	ops := testkit.As("ops", identity.Admin)
	fixtures := testkit.Build(t, fixturesPkg)
	if _, err := d.Bridge.Mount(ops, &bridgev1.MountRequest{Client: "fx",
		Config: &bridgev1.ServerConfig{Transport: &bridgev1.ServerConfig_Stdio{Stdio: &bridgev1.StdioTransport{Command: fixtures}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Reg.RegisterClient(ops, &registryv1.RegisterClientRequest{Workspace: "default", Client: "fx"}); err != nil {
		t.Fatal(err)
	}
	procs.WaitPresent(t, d.Reg, "fx", true, procs.StartTimeout)
	mcp := &taskClient{url: "http://" + d.HTTPAddr + "/mcp", dev: d, asks: true}

	r := mcp.send(t, "tools/call", "fx_confirm_delete", map[string]any{"arguments": map[string]any{"filename": "notes.txt"}})
	var created taskReply
	if r.err != nil || json.Unmarshal(r.result, &created) != nil || created.ResultType != "task" {
		t.Fatalf("tools/call fx_confirm_delete as a task = %s, %v", r.result, r.err)
	}
	asking := func(tr taskReply) bool { return tr.Status == "input_required" && len(tr.InputRequests) == 1 }
	before := mcp.await(t, created.TaskID, "input_required", func(tr taskReply) bool { return tr.Status != "working" })
	if !asking(before) {
		t.Fatalf("the task asking its question = %+v (result %s)", before, before.Result)
	}

	d.Proc.Kill()
	d.Start()
	after := mcp.await(t, created.TaskID, "input_required again, asked by the new run", func(tr taskReply) bool {
		return tr.Status == "input_required" && !slices.Equal(keys(tr), keys(before))
	})
	if !asking(after) || !strings.Contains(fmt.Sprint(after.InputRequests[keys(after)[0]].Params["message"]), "notes.txt") {
		t.Fatalf("the task after kill -9 = %+v", after)
	}
	answers := map[string]any{}
	for k := range after.InputRequests {
		answers[k] = map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}
	}
	if r := mcp.send(t, "tasks/update", created.TaskID, map[string]any{"inputResponses": answers}); r.err != nil || string(r.result) != `{"resultType":"complete"}` {
		t.Fatalf("tasks/update = %s, %v", r.result, r.err)
	}
	done := mcp.await(t, created.TaskID, "completed", func(tr taskReply) bool { return tr.Status != "input_required" && tr.Status != "working" })
	if done.Status != "completed" || !strings.Contains(string(done.Result), "notes.txt: accept map[confirm:true]") {
		t.Fatalf("the answered task = %+v (result %s)", done, done.Result)
	}
}

// keys are a task's input request keys, sorted.
func keys(tr taskReply) []string { return slices.Sorted(maps.Keys(tr.InputRequests)) }
