package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/lib/retry"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
)

// Task status pushes (the extension's notifications/tasks, docs/mcp.md
// "Tasks"): a subscriptions/listen naming taskIds is answered here, as the
// SDK knows no taskIds, and for those tasks alone.

// maxListenTasks bounds the tasks one subscriptions/listen may follow.
const maxListenTasks = 64

// listenParams are the params of a subscriptions/listen, as far as tasks go.
type listenParams struct {
	Meta          map[string]any `json:"_meta"`
	Notifications *struct {
		TaskIDs []string `json:"taskIds"`
	} `json:"notifications"`
}

// listenTasks answers a stateless-era subscriptions/listen that names
// taskIds, for caller id, and reports whether it did. The acknowledgement
// names the tasks the caller may read (another's, or none, is left out);
// then each change of one comes as notifications/tasks with the task as
// tasks/get shows it; once every task has ended (or the gateway shuts
// down) the stream ends with the listen's result.
func (v *view) listenTasks(rw http.ResponseWriter, r *http.Request, req rpcRequest, id identity.Identity) bool {
	var p listenParams
	if r.Header.Get("Mcp-Protocol-Version") < firstStatelessRevision || json.Unmarshal(req.Params, &p) != nil ||
		p.Notifications == nil || len(p.Notifications.TaskIDs) == 0 {
		return false
	}
	if !declaresTasks(p.Meta) {
		e := undeclared("subscriptions/listen")
		e.Message = fmt.Sprintf("subscriptions/listen: notifications.taskIds belongs to the Tasks extension (%s), which this request does not declare in _meta[%q].extensions",
			TasksExtension, metaClientCapabilities)
		writeRPCStatus(rw, http.StatusBadRequest, req.ID, nil, e)
		return true
	}
	ids := slices.Compact(slices.Sorted(slices.Values(p.Notifications.TaskIDs)))
	if len(ids) > maxListenTasks || slices.ContainsFunc(ids, func(t string) bool { return t == "" || len(t) > maxTaskID }) {
		writeRPCStatus(rw, http.StatusBadRequest, req.ID, nil, &rpcError{Code: codeInvalidParams, Message: fmt.Sprintf(
			"subscriptions/listen follows at most %d tasks, each named by an id of 1 to %d characters; notifications.taskIds has %d: %s",
			maxListenTasks, maxTaskID, len(p.Notifications.TaskIDs), clip(req.Params))})
		return true
	}
	// The listen ends when the client leaves, or the gateway shuts down.
	ctx, cancel := context.WithCancel(identity.As(r.Context(), id))
	defer cancel()
	go func() {
		select {
		case <-v.m.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	agreed := []string{} // the acknowledgement lists none as []
	var first []*mailboxv1.StatusResponse
	for _, t := range ids {
		qctx, cancel := context.WithTimeout(ctx, taskCallTimeout)
		st, err := v.m.mailbox.Status(qctx, &mailboxv1.StatusRequest{Invocation: t})
		cancel()
		if err == nil {
			agreed, first = append(agreed, t), append(first, st)
		}
	}
	unbound(rw)
	out := newEventStream(rw)
	out.notify("notifications/subscriptions/acknowledged", map[string]any{"notifications": map[string]any{"taskIds": agreed}})
	var wg sync.WaitGroup
	for _, st := range first {
		wg.Go(func() { v.followTask(ctx, out, st) })
	}
	wg.Wait()
	if r.Context().Err() == nil { // every task ended, or the gateway is going
		out.write(rpcMessage(req.ID, map[string]any{"resultType": "complete", "_meta": map[string]any{}}, nil))
	}
	return true
}

// followTask sends task st's state, then each change of it, until it ends
// (or expires) or ctx does. A mailbox that cannot answer is asked again.
func (v *view) followTask(ctx context.Context, out *eventStream, st *mailboxv1.StatusResponse) {
	var sent []byte
	b := retry.NewBackoff(retry.Default)
	for ctx.Err() == nil {
		t, err := taskOf(st, time.Now(), v.m.hasOutputSchema(st.GetClient(), st.GetTool()))
		if err != nil {
			return
		}
		if key := taskKey(t); !bytes.Equal(key, sent) {
			out.notify("notifications/tasks", t)
			sent = key
		}
		if t.Status == taskCompleted || t.Status == taskFailed || t.Status == taskCancelled {
			return
		}
		// Wait for a note after the last (an answer or a cancel ends the
		// wait too), then read the task whole: taskOf needs every note.
		id := st.GetInvocation()
		_, err = v.m.mailbox.Status(ctx, &mailboxv1.StatusRequest{Invocation: id, After: lastSeq(st), Wait: durationpb.New(progressWait)})
		next := st
		if err == nil {
			next, err = v.m.mailbox.Status(ctx, &mailboxv1.StatusRequest{Invocation: id})
		}
		switch {
		case status.Code(err) == codes.NotFound:
			return // expired
		case err != nil:
			if !retry.Sleep(ctx, b.Next(), nil) {
				return
			}
		default:
			st = next
			b.Reset()
		}
	}
}

// taskKey is what a change of t is judged by: t without its ttlMs, which
// is reckoned from the clock at each read.
func taskKey(t *task) []byte {
	c := *t
	c.TTLMs = 0
	return jsonValue(c)
}

func lastSeq(st *mailboxv1.StatusResponse) int64 {
	var seq int64
	for _, n := range st.GetProgress() {
		seq = max(seq, n.GetSeq())
	}
	return seq
}

// eventStream is an SSE answer written by several goroutines, each event
// flushed as it is written.
type eventStream struct {
	mu sync.Mutex
	rw http.ResponseWriter
	rc *http.ResponseController
}

// streamHeaders are those of an event stream that lasts: no cache, and no
// proxy buffering that would hold its events back.
func streamHeaders(h http.Header) {
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
}

func newEventStream(rw http.ResponseWriter) *eventStream {
	streamHeaders(rw.Header())
	rw.WriteHeader(http.StatusOK)
	return &eventStream{rw: rw, rc: http.NewResponseController(rw)}
}

func (s *eventStream) notify(method string, params any) {
	s.write(jsonValue(struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}{"2.0", method, params}))
}

func (s *eventStream) write(msg []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, _ = s.rw.Write(eventFrame(bytes.TrimSpace(msg)))
	_ = s.rc.Flush()
}
