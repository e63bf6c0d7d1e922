package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/audit"
	"github.com/switchboard-run/switchboard/kit/suite/grpcserver"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
)

// The Tasks extension at the HTTP boundary. The SDK (v1.8.0) knows neither
// tasks/get, tasks/update nor tasks/cancel (in the era with sessions it
// answers them with a plain HTTP 400), and cannot answer a tools/call with
// anything but a CallToolResult. So the endpoint reads each POST's body
// first, and answers itself the extension's three requests and a tools/call
// whose _meta declares the extension; everything else, and every byte of
// it, goes on to the SDK. When the SDK gains Tasks, this file goes and
// tasks.go's mapping moves into its handlers.

// JSON-RPC error codes the extension names.
const (
	codeInvalidParams     = -32602
	codeInternal          = -32603
	codeMissingCapability = mcp.CodeMissingRequiredClientCapabilities
)

// undeclared refuses one of the extension's methods to a request whose _meta
// does not declare the extension, naming what it lacks in data as MCP asks.
func undeclared(method string) *rpcError {
	return &rpcError{Code: codeMissingCapability,
		Message: fmt.Sprintf("%s is a method of the Tasks extension (%s), which this request does not declare in _meta[%q].extensions",
			method, TasksExtension, metaClientCapabilities),
		Data: map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{TasksExtension: map[string]any{}}}}}
}

// errorStatus is the HTTP status of an error answer: the stateless era
// (SEP-2575) answers an unknown method 404, and invalid params, an
// unsupported revision and a missing capability 400; a session's answers
// are all 200.
func errorStatus(r *http.Request, code int) int {
	if r.Header.Get("Mcp-Protocol-Version") < firstStatelessRevision {
		return http.StatusOK
	}
	switch code {
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case codeInvalidParams, codeMissingCapability, mcp.CodeUnsupportedProtocolVersion:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// maxTaskID bounds a taskId before it reaches the mailbox (a handle is 36
// characters).
const maxTaskID = 128

// taskCallTimeout bounds the mailbox requests a task request makes.
const taskCallTimeout = 10 * time.Second

// taskCancelReason is added to a cancelled task's capture.
const taskCancelReason = "the MCP client cancelled the task (tasks/cancel)"

// rpcRequest is one JSON-RPC request, its params left for the method.
type rpcRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// taskParams are the params of tasks/get, tasks/update and tasks/cancel.
type taskParams struct {
	TaskID         string          `json:"taskId"`
	InputResponses json.RawMessage `json:"inputResponses"`
	Meta           map[string]any  `json:"_meta"`
}

// callParams are the params of a tools/call.
type callParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Meta      map[string]any  `json:"_meta"`
}

// rpcError is a JSON-RPC error.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// readBody reads a POST's body for the requests answered in front of the
// SDK, and puts it back whole for the SDK; ok is false when there is none,
// or it is over the suite's message limit (the SDK refuses it).
func readBody(r *http.Request) (body []byte, ok bool) {
	if r.Method != http.MethodPost || r.Body == nil {
		return nil, false
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, grpcserver.MaxMessageBytes+1))
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), r.Body)) // the SDK reads it all again, and bounds it
	return body, err == nil && len(body) <= grpcserver.MaxMessageBytes
}

// serveTasks answers the POST body of r when it is one of the extension's
// requests, for caller id at view v, and reports whether it did. Only a
// body that names "tasks" somewhere is decoded, so other requests cost one
// scan of their bytes.
func (v *view) serveTasks(rw http.ResponseWriter, r *http.Request, body []byte, id identity.Identity) bool {
	if !bytes.Contains(body, []byte("tasks")) && !bytes.Contains(body, []byte("taskIds")) {
		return false
	}
	var req rpcRequest
	if json.Unmarshal(body, &req) != nil || req.JSONRPC != "2.0" || len(req.ID) == 0 || string(req.ID) == "null" {
		return false // a batch, a notification, or not JSON-RPC: the SDK says what is wrong
	}
	ctx, cancel := context.WithTimeout(identity.As(context.WithoutCancel(r.Context()), id), taskCallTimeout)
	defer cancel()
	switch req.Method {
	case "tasks/get", "tasks/update", "tasks/cancel":
		var p taskParams
		err := json.Unmarshal(req.Params, &p)
		switch {
		case err == nil && !declaresTasks(p.Meta):
			writeRPCStatus(rw, errorStatus(r, codeMissingCapability), req.ID, nil, undeclared(req.Method))
		case err != nil || p.TaskID == "" || len(p.TaskID) > maxTaskID:
			writeRPCStatus(rw, errorStatus(r, codeInvalidParams), req.ID, nil, &rpcError{Code: codeInvalidParams, Message: fmt.Sprintf(
				"%s takes params {\"taskId\": \"inv-…\"} with a task id of at most %d characters, not %s", req.Method, maxTaskID, clip(req.Params))})
		default:
			if mismatch := headerMismatch(r, req.Method, p.TaskID); mismatch != nil {
				writeRPCStatus(rw, http.StatusBadRequest, req.ID, nil, mismatch)
				return true
			}
			res, rerr := v.taskRequest(ctx, req.Method, p)
			code := http.StatusOK
			if rerr != nil {
				code = errorStatus(r, rerr.Code)
			}
			writeRPCStatus(rw, code, req.ID, v.annotate(r, res), rerr)
		}
		return true
	case "subscriptions/listen":
		return v.listenTasks(rw, r, req, id)
	case "tools/call":
		var p callParams
		if json.Unmarshal(req.Params, &p) != nil || !declaresTasks(p.Meta) {
			return false
		}
		if mismatch := headerMismatch(r, req.Method, p.Name); mismatch != nil {
			writeRPCStatus(rw, http.StatusBadRequest, req.ID, nil, mismatch)
			return true
		}
		keyed, err := withIdempotencyKey(ctx, r.Header)
		if err != nil {
			writeRPC(rw, req.ID, v.annotate(r, refusal(status.Convert(err).Message())), nil)
			return true
		}
		res, rerr := v.createTask(keyed, p)
		writeRPC(rw, req.ID, v.annotate(r, res), rerr)
		return true
	}
	return false
}

// taskRequest answers tasks/get, tasks/update or tasks/cancel. A task the
// caller did not create is unknown, in the very words of one that never
// existed: the mailbox answers anyone but the poster so.
func (v *view) taskRequest(ctx context.Context, method string, p taskParams) (any, *rpcError) {
	if method == "tasks/cancel" {
		if _, err := v.m.mailbox.Cancel(ctx, &mailboxv1.CancelRequest{Invocation: p.TaskID, Reason: proto.String(taskCancelReason), Keep: true}); err != nil {
			return nil, taskError(p.TaskID, err)
		}
		return map[string]string{"resultType": "complete"}, nil
	}
	st, err := v.m.mailbox.Status(ctx, &mailboxv1.StatusRequest{Invocation: p.TaskID})
	if err != nil {
		return nil, taskError(p.TaskID, err)
	}
	if method == "tasks/update" {
		return v.updateTask(ctx, p, st)
	}
	t, err := taskOf(st, time.Now(), v.m.hasOutputSchema(st.GetClient(), st.GetTool()))
	if err != nil {
		return nil, &rpcError{Code: codeInternal, Message: err.Error()}
	}
	t.ResultType = "complete"
	return t, nil
}

// updateTask answers the task's waiting questions that inputResponses
// answer; as the extension asks, a key not waiting (never asked, answered,
// or void) is ignored, and the acknowledgement comes before the task shows
// the answers.
func (v *view) updateTask(ctx context.Context, p taskParams, st *mailboxv1.StatusResponse) (any, *rpcError) {
	var responses map[string]json.RawMessage
	if err := json.Unmarshal(p.InputResponses, &responses); err != nil || responses == nil {
		return nil, &rpcError{Code: codeInvalidParams, Message: fmt.Sprintf(
			`tasks/update takes params {"taskId": "inv-…", "inputResponses": {"<key of an inputRequest>": {…}}}, not inputResponses %s`, clip(p.InputResponses))}
	}
	for _, n := range waiting(st.GetProgress(), st.GetHandOffs()) {
		key := n.GetQuestion().GetId()
		res, ok := responses[key]
		if !ok {
			continue
		}
		_, err := v.m.mailbox.Answer(ctx, &mailboxv1.AnswerRequest{Invocation: p.TaskID, Question: key, Result: string(res)})
		switch status.Code(err) {
		case codes.OK, codes.FailedPrecondition: // void meanwhile: tasks/get says what became of the task
		case codes.InvalidArgument:
			return nil, &rpcError{Code: codeInvalidParams, Message: fmt.Sprintf("tasks/update: inputResponses[%q]: %s", key, status.Convert(err).Message())}
		default:
			return nil, taskError(p.TaskID, err)
		}
	}
	return map[string]string{"resultType": "complete"}, nil
}

// createTask posts a task-augmented tools/call and answers with its task,
// once the mailbox has stored it (a tasks/get on any replica finds it from
// then on, as the extension requires before the answer). A call refused
// before its post is answered as the synchronous call would be: with the
// refusal as an isError result, and no task.
func (v *view) createTask(ctx context.Context, p callParams) (any, *rpcError) {
	e, refused := v.resolve(p.Name)
	if refused != nil {
		return refused, nil
	}
	input := string(p.Arguments)
	if input == "" || input == "null" {
		input = "{}"
	}
	// A client that can be asked hears the host's questions, and a
	// stateless-era server's input_required results, as the task's
	// input_required.
	caps, asks := askable(p.Meta, nil), askNone
	if len(caps) > 0 {
		asks = askTask
	}
	params, err := forwarded(nil, "", caps, "", asks)
	if err != nil {
		return refusal(err.Error()), nil
	}
	posted, err := v.m.mailbox.MailboxServiceClient.Invoke(audit.WithFront(ctx, "mcp"),
		&mailboxv1.InvokeRequest{Client: e.client, Tool: e.def.GetName(), Input: input, McpParams: params})
	if err != nil {
		return refusal(status.Convert(err).Message()), nil
	}
	inv := posted.GetInvocation()
	st, err := v.m.mailbox.Status(ctx, &mailboxv1.StatusRequest{Invocation: inv})
	var t *task
	if err == nil {
		t, err = taskOf(st, time.Now(), e.def.OutputSchema != nil)
	}
	if err != nil {
		// No task to hand out: the call is withdrawn, and the client told why.
		_, _ = v.m.mailbox.Cancel(ctx, &mailboxv1.CancelRequest{Invocation: inv, Reason: proto.String("its task could not be read back")})
		return refusal(fmt.Sprintf("invocation %s of tool %q was posted but its task could not be read back, so it was cancelled: %s",
			inv, p.Name, status.Convert(err).Message())), nil
	}
	// The seed is a Task, without the detailed variants' fields: a tool
	// that was quick may be completed already, and its result is read
	// with tasks/get like any other.
	t.ResultType, t.Result, t.Error = "task", nil, nil
	return t, nil
}

// annotate gives a result what the SDK gives each result of the stateless
// era (SEP-2575): a resultType ("complete" unless it says otherwise) and
// the server's identity in _meta. An acknowledgement stays bare, as the
// SDK leaves its empty results.
func (v *view) annotate(r *http.Request, res any) any {
	if res == nil || r.Header.Get("Mcp-Protocol-Version") < firstStatelessRevision {
		return res
	}
	raw, err := json.Marshal(res)
	var m map[string]any
	if err != nil || json.Unmarshal(raw, &m) != nil || len(m) <= 1 {
		return res
	}
	if _, ok := m["resultType"]; !ok {
		m["resultType"] = "complete"
	}
	meta, _ := m["_meta"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
	}
	meta[mcp.MetaKeyServerInfo] = v.impl
	m["_meta"] = meta
	return m
}

// hasOutputSchema reports whether client's tool, as the workspace lists it
// now, declares an output schema.
func (m *Mirror) hasOutputSchema(client, tool string) bool {
	m.all.mu.RLock()
	defer m.all.mu.RUnlock()
	for _, e := range m.all.tools {
		if e.client == client && e.def.GetName() == tool {
			return e.def.OutputSchema != nil
		}
	}
	return false
}

// taskError is the JSON-RPC error of a mailbox refusal about a task: an
// unknown (or someone else's, or expired) task is invalid params, as the
// extension says; anything else is internal.
func taskError(id string, err error) *rpcError {
	if status.Code(err) == codes.NotFound {
		return &rpcError{Code: codeInvalidParams, Message: fmt.Sprintf("unknown task %q: %s", id, status.Convert(err).Message())}
	}
	return &rpcError{Code: codeInternal, Message: fmt.Sprintf("task %q: %s", id, status.Convert(err).Message())}
}

// writeRPC writes one JSON-RPC response as the whole HTTP reply.
func writeRPC(rw http.ResponseWriter, id json.RawMessage, result any, rerr *rpcError) {
	writeRPCStatus(rw, http.StatusOK, id, result, rerr)
}

// headerMismatch checks a stateless-era request's routing headers
// (SEP-2243) against its body, as the SDK checks the requests it answers:
// Mcp-Method must name the method, and Mcp-Name the tool of a tools/call;
// on the extension's requests an Mcp-Name, when sent, must name the task.
func headerMismatch(r *http.Request, method, name string) *rpcError {
	if r.Header.Get("Mcp-Protocol-Version") < firstStatelessRevision {
		return nil
	}
	got := r.Header.Get(methodHeader)
	switch {
	case got == "":
		return &rpcError{Code: mcp.CodeHeaderMismatch, Message: "missing required Mcp-Method header"}
	case got != method:
		return &rpcError{Code: mcp.CodeHeaderMismatch, Message: fmt.Sprintf("header mismatch: Mcp-Method header value '%s' does not match body value '%s'", got, method)}
	}
	header, sent := r.Header.Get(nameHeader), len(r.Header.Values(nameHeader)) > 0
	switch {
	case method == callMethod && !sent:
		return &rpcError{Code: mcp.CodeHeaderMismatch, Message: fmt.Sprintf("missing required Mcp-Name header for method %q", method)}
	case sent && header != name:
		return &rpcError{Code: mcp.CodeHeaderMismatch, Message: fmt.Sprintf("header mismatch: Mcp-Name header value '%s' does not match body value '%s'", header, name)}
	}
	return nil
}

// writeRPCStatus is writeRPC with another HTTP status (400 for a request
// the SDK would refuse before reading it).
func writeRPCStatus(rw http.ResponseWriter, code int, id json.RawMessage, result any, rerr *rpcError) {
	msg := struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result,omitempty"`
		Error   *rpcError       `json:"error,omitempty"`
	}{JSONRPC: "2.0", ID: id, Result: result, Error: rerr}
	body, err := json.Marshal(msg)
	if err != nil {
		body, _ = json.Marshal(struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   rpcError        `json:"error"`
		}{"2.0", id, rpcError{Code: codeInternal, Message: "encoding the answer: " + err.Error()}})
	}
	writeJSONStatus(rw, code, body)
}

// writeJSONStatus answers body, a JSON-RPC message, with HTTP status code.
func writeJSONStatus(rw http.ResponseWriter, code int, body []byte) {
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(code)
	_, _ = rw.Write(body)
}

// clip is at most 200 bytes of raw JSON, for a sentence.
func clip(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "none"
	}
	if len(raw) > 200 {
		return string(raw[:200]) + "…"
	}
	return string(raw)
}
