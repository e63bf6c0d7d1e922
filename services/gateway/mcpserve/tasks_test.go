package mcpserve

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
)

// Each phase of an invocation maps to the task status docs/mcp.md's
// "Tasks" table names, and an answered one's result is the synchronous
// call's mapping of the same capture.
func TestATaskIsItsInvocationsStatus(t *testing.T) {
	now := time.Date(2026, 12, 2, 7, 30, 0, 0, time.UTC)
	posted := now.Add(-90 * time.Second)
	noted := now.Add(-time.Second)
	base := func(phase mailboxv1.Phase) *mailboxv1.StatusResponse {
		return &mailboxv1.StatusResponse{Invocation: "inv-1", Phase: phase, ExpiresIn: durationpb.New(time.Hour - 90*time.Second),
			Posted: timestamppb.New(posted)}
	}
	working := base(mailboxv1.Phase_PHASE_HANDED_OUT)
	working.Progress = []*mailboxv1.ProgressNote{
		{Seq: 1, Progress: 1, At: timestamppb.New(posted)},
		{Seq: 2, Progress: 2, Total: proto.Float64(5), Message: "compiling", At: timestamppb.New(noted)},
	}
	answered := base(mailboxv1.Phase_PHASE_ANSWERED)
	answered.Capture = &mailboxv1.Capture{Stdout: proto.String(`{"files": 3}`), Stderr: proto.String(""), ExitCode: proto.Int32(0)}
	failed := base(mailboxv1.Phase_PHASE_ANSWERED)
	failed.Capture = &mailboxv1.Capture{Stdout: proto.String("out"), Stderr: proto.String("bad"), ExitCode: proto.Int32(3)}
	rpcFailed := base(mailboxv1.Phase_PHASE_ANSWERED)
	rpcFailed.Capture = &mailboxv1.Capture{Stdout: proto.String(""), Stderr: proto.String("JSON-RPC error -32603: boom"), ExitCode: proto.Int32(1),
		McpError: proto.String(`{"code":-32603,"message":"boom","data":{"why":"disk"}}`)}
	cancelled := base(mailboxv1.Phase_PHASE_CANCELLED)
	cancelled.Capture = &mailboxv1.Capture{Stdout: proto.String(""), Stderr: proto.String("cancelled by its poster"), ExitCode: proto.Int32(130)}

	for _, c := range []struct {
		name   string
		st     *mailboxv1.StatusResponse
		schema bool
		want   task
	}{
		{"queued", base(mailboxv1.Phase_PHASE_QUEUED), false, task{Status: "working", PollIntervalMs: 1000, LastUpdatedAt: stamp(posted)}},
		{"working with notes", working, false, task{Status: "working", PollIntervalMs: 1000, StatusMessage: "compiling (2/5)", LastUpdatedAt: stamp(noted),
			Meta: map[string]any{MetaProgress: map[string]any{"seq": int64(2), "progress": 2.0, "total": 5.0, "message": "compiling"}}}},
		{"answered, with an output schema", answered, true, task{Status: "completed", LastUpdatedAt: stamp(posted), Result: fromCapture(answered.Capture, true)}},
		{"answered, without", answered, false, task{Status: "completed", LastUpdatedAt: stamp(posted), Result: fromCapture(answered.Capture, false)}},
		{"answered with a failure", failed, false, task{Status: "completed", LastUpdatedAt: stamp(posted), Result: fromCapture(failed.Capture, false)}},
		{"answered with a server's JSON-RPC error", rpcFailed, false, task{Status: "failed", StatusMessage: "boom", LastUpdatedAt: stamp(posted),
			Error: &capture.RPCError{Code: -32603, Message: "boom", Data: json.RawMessage(`{"why":"disk"}`)}}},
		{"cancelled", cancelled, false, task{Status: "cancelled", StatusMessage: "cancelled by its poster", LastUpdatedAt: stamp(posted)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := taskOf(c.st, now, c.schema)
			if err != nil {
				t.Fatal(err)
			}
			want := c.want
			want.TaskID, want.CreatedAt, want.TTLMs = "inv-1", stamp(posted), time.Hour.Milliseconds()
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			if string(g) != string(w) {
				t.Fatalf("task =\n%s\nwant\n%s", g, w)
			}
		})
	}
	if _, err := taskOf(base(mailboxv1.Phase_PHASE_COLLECTED), now, false); err == nil {
		t.Fatal("a collected invocation made a task")
	}
	// With the mailbox's warning the task stays completed, its result
	// saying the warning.
	rpcFailed.Capture.Warning = proto.String("it may have run twice")
	if got, err := taskOf(rpcFailed, now, false); err != nil || got.Status != "completed" || got.Error != nil || got.Result.Meta[MetaWarning] != "it may have run twice" {
		t.Fatalf("a failed capture with a warning: %+v, %v", got, err)
	}
	// A mailbox that does not say when it was posted: createdAt is now,
	// and createdAt + ttlMs is still the expiry.
	st := base(mailboxv1.Phase_PHASE_QUEUED)
	st.Posted = nil
	got, err := taskOf(st, now, false)
	if err != nil || got.CreatedAt != stamp(now) || got.TTLMs != (time.Hour-90*time.Second).Milliseconds() {
		t.Fatalf("without a post time: %+v, %v", got, err)
	}
}

func TestOnlyARequestThatDeclaresTheExtensionGetsATask(t *testing.T) {
	for _, c := range []struct {
		meta string
		want bool
	}{
		{`{"io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}`, true},
		{`{"io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/other": {}}}}`, false},
		{`{"io.modelcontextprotocol/clientCapabilities": {}}`, false},
		{`{"io.modelcontextprotocol/clientCapabilities": "tasks"}`, false},
		{`{}`, false},
		{`null`, false},
	} {
		var meta map[string]any
		if err := json.Unmarshal([]byte(c.meta), &meta); err != nil {
			t.Fatal(err)
		}
		if got := declaresTasks(meta); got != c.want {
			t.Errorf("declaresTasks(%s) = %v", c.meta, got)
		}
	}
	if !reflect.DeepEqual(noteText(&mailboxv1.ProgressNote{Progress: 3}), "3") ||
		noteText(&mailboxv1.ProgressNote{Progress: 0.5, Total: proto.Float64(1)}) != "0.5/1" {
		t.Fatal("noteText")
	}
}
