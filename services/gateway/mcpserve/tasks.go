package mcpserve

import (
	"fmt"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
)

// The MCP Tasks extension over the mailbox: a task is an invocation, its id
// the handle (128 random bits), its state the mailbox's Status (read, never
// taken), tasks/cancel a Cancel with keep. Nothing of a task lives in the
// gateway, so it outlives the connection, the replica and, with the durable
// store, a restart. The Go SDK has no Tasks support: tasks_http.go answers
// the requests in front of it; this file is the mapping (docs/mcp.md, "Tasks").

// TasksExtension is the extension's identifier, as the client declares it
// in a request's _meta and the server in its capabilities.
const TasksExtension = "io.modelcontextprotocol/tasks"

// metaClientCapabilities is the _meta key of a request's client
// capabilities (2026-07-28; a client of the era with sessions may send it too).
const metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"

// MetaProgress is the _meta key of a task's latest progress note.
const MetaProgress = "run.switchboard/progress"

// TaskPollInterval is the pollIntervalMs of a working task: a Status read
// is one small request to the mailbox, and a person waiting on a tool sees
// its progress within a second.
const TaskPollInterval = time.Second

// task is the extension's Task, with the fields of its detailed variants
// (a completed task's result).
type task struct {
	ResultType     string              `json:"resultType,omitempty"`
	TaskID         string              `json:"taskId"`
	Status         string              `json:"status"`
	StatusMessage  string              `json:"statusMessage,omitempty"`
	CreatedAt      string              `json:"createdAt"`
	LastUpdatedAt  string              `json:"lastUpdatedAt"`
	TTLMs          int64               `json:"ttlMs"`
	PollIntervalMs int64               `json:"pollIntervalMs,omitempty"`
	InputRequests  mcp.InputRequestMap `json:"inputRequests,omitempty"`
	Result         *mcp.CallToolResult `json:"result,omitempty"`
	Error          *capture.RPCError   `json:"error,omitempty"`
	Meta           map[string]any      `json:"_meta,omitempty"`
}

// Task statuses. input_required while a host's question waits for its
// answer (questions.go). failed only for a JSON-RPC error a mounted server
// answered (the capture's mcp_error), as the extension keeps it; a tool
// that failed is completed with its isError result.
const (
	taskWorking       = "working"
	taskInputRequired = "input_required"
	taskCompleted     = "completed"
	taskFailed        = "failed"
	taskCancelled     = "cancelled"
)

// taskOf maps an invocation's Status to its task at now: queued or handed
// out is working (the latest progress note as statusMessage and under
// _meta[MetaProgress]); answered is completed with the capture mapped as a
// tools/call maps it, or failed with a server's JSON-RPC error; cancelled
// keeps the capture's sentence. createdAt is the post, ttlMs what is left of
// the slot from then. hasOutputSchema: the tool declares an output schema.
func taskOf(st *mailboxv1.StatusResponse, now time.Time, hasOutputSchema bool) (*task, error) {
	created := now
	if st.GetPosted() != nil {
		created = st.GetPosted().AsTime()
	}
	updated := created
	expires := now.Add(st.GetExpiresIn().AsDuration())
	t := &task{TaskID: st.GetInvocation(), CreatedAt: stamp(created), TTLMs: expires.Sub(created).Milliseconds()}
	notes := st.GetProgress()
	if len(notes) > 0 {
		if at := notes[len(notes)-1].GetAt().AsTime(); at.After(updated) {
			updated = at
		}
	}
	if i := lastIndexFunc(notes, isProgress); i >= 0 {
		last := notes[i]
		t.StatusMessage = noteText(last)
		p := map[string]any{"seq": last.GetSeq(), "progress": last.GetProgress()}
		if last.Total != nil {
			p["total"] = last.GetTotal()
		}
		if last.GetMessage() != "" {
			p["message"] = last.GetMessage()
		}
		t.Meta = map[string]any{MetaProgress: p}
	}
	switch st.GetPhase() {
	case mailboxv1.Phase_PHASE_QUEUED, mailboxv1.Phase_PHASE_HANDED_OUT:
		t.Status, t.PollIntervalMs = taskWorking, TaskPollInterval.Milliseconds()
		if asked := waiting(notes, st.GetHandOffs()); len(asked) > 0 {
			requests, err := inputRequests(asked)
			if err != nil {
				return nil, fmt.Errorf("invocation %s asks its client what cannot be passed on: %v", st.GetInvocation(), err)
			}
			t.Status, t.InputRequests = taskInputRequired, requests
			t.StatusMessage = fmt.Sprintf("waiting for the client's answer to %d question(s): tasks/update with inputResponses", len(asked))
		}
	case mailboxv1.Phase_PHASE_ANSWERED:
		t.Status, t.Result = taskCompleted, fromCapture(st.GetCapture(), hasOutputSchema)
		t.StatusMessage = ""
		if e := rpcErrorOf(st.GetCapture()); e != nil {
			t.Status, t.Result, t.Error, t.StatusMessage = taskFailed, nil, e, e.Message
		}
	case mailboxv1.Phase_PHASE_CANCELLED:
		t.Status, t.StatusMessage = taskCancelled, st.GetCapture().GetStderr()
	default:
		return nil, fmt.Errorf("the mailbox says invocation %s is in phase %v, which no task status stands for", st.GetInvocation(), st.GetPhase())
	}
	t.LastUpdatedAt = stamp(updated)
	return t, nil
}

// lastIndexFunc is the index of the last note f holds for, or -1.
func lastIndexFunc(notes []*mailboxv1.ProgressNote, f func(*mailboxv1.ProgressNote) bool) int {
	for i := len(notes) - 1; i >= 0; i-- {
		if f(notes[i]) {
			return i
		}
	}
	return -1
}

// isProgress reports whether n says how far the run has got (not a log
// message, a question, or an answer's mark).
func isProgress(n *mailboxv1.ProgressNote) bool {
	return n.GetLog() == nil && n.GetQuestion() == nil && n.GetAnswered() == ""
}

// noteText is a progress note for a person: its message and how far, as
// "message (3/5)", "message (3)", or the numbers alone.
func noteText(n *mailboxv1.ProgressNote) string {
	count := strconv.FormatFloat(n.GetProgress(), 'f', -1, 64)
	if n.Total != nil {
		count += "/" + strconv.FormatFloat(n.GetTotal(), 'f', -1, 64)
	}
	if n.GetMessage() == "" {
		return count
	}
	return n.GetMessage() + " (" + count + ")"
}

// stamp is an ISO 8601 time, as the extension's timestamps are.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// declaresTasks reports whether a request's _meta declares the extension
// among the client's capabilities: only then may its tools/call be answered
// with a task (the extension forbids a task to any other request, whatever
// the client declared before).
func declaresTasks(meta map[string]any) bool {
	caps, _ := meta[metaClientCapabilities].(map[string]any)
	ext, _ := caps["extensions"].(map[string]any)
	_, ok := ext[TasksExtension]
	return ok
}
