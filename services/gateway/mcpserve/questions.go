package mcpserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/contract"
)

// Questions (docs/mcp.md, "Questions"): a mounted server of the era with
// sessions asks its client during a tool call (elicitation/create,
// sampling/createMessage); the bridge posts the request as a question note
// on the invocation, and the endpoint, reading the call's notes, asks its
// own client and posts the answer (Answer), which reaches the bridge and
// the server.

// asking is how the endpoint puts the host's questions to a call's client.
type asking int

const (
	askNone    asking = iota // the client declared nothing it can be asked: the bridge refuses
	askSession               // on its session, as server-to-client requests (the era with sessions)
	askResult                // in an input_required result, resumed by its retry (resume.go)
	askTask                  // in its task's input_required, answered by tasks/update (tasks_http.go)
)

// askingOf is how req's client is asked: a stateless client by the
// capabilities in its _meta, a client in a session by its initialize; only
// elicitation and sampling are asked (the bridge answers roots/list).
func askingOf(req *mcp.CallToolRequest) asking {
	if req.Params == nil {
		return askNone
	}
	if _, stateless := req.Params.Meta[mcp.MetaKeyClientCapabilities]; stateless {
		caps := askable(req.Params.Meta, nil)
		if caps["elicitation"] != nil || caps["sampling"] != nil {
			return askResult
		}
		return askNone
	}
	if req.Session == nil {
		return askNone
	}
	init := req.Session.InitializeParams()
	if init == nil || init.Capabilities == nil || init.Capabilities.Elicitation == nil && init.Capabilities.Sampling == nil {
		return askNone
	}
	return askSession
}

// ask asks the client q in its session and posts its answer, or the
// client's refusal, for the host.
func (r *noteRelay) ask(ctx context.Context, q *mailboxv1.Question) {
	res, err := askClient(ctx, r.session, q)
	if ctx.Err() != nil {
		return // the call ended: its question is void
	}
	req := &mailboxv1.AnswerRequest{Invocation: r.id, Question: q.GetId()}
	if err == nil {
		var b []byte
		if b, err = json.Marshal(res); err == nil {
			req.Result = string(b)
		}
	}
	if err != nil {
		req.Error = answerError(err)
	}
	if _, err := r.m.mailbox.Answer(ctx, req); err != nil && ctx.Err() == nil {
		r.m.log.Info("an answer to a mounted server's question was not taken", "invocation", r.id, "question", q.GetId(), "err", err)
	}
}

// askClient makes q's request of the session's client.
func askClient(ctx context.Context, session *mcp.ServerSession, q *mailboxv1.Question) (mcp.Result, error) {
	switch q.GetMethod() {
	case "elicitation/create":
		var p mcp.ElicitParams
		if err := json.Unmarshal([]byte(q.GetParams()), &p); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "elicitation/create: " + err.Error()}
		}
		return session.Elicit(ctx, &p)
	case "sampling/createMessage":
		var p mcp.CreateMessageParams
		if err := json.Unmarshal([]byte(q.GetParams()), &p); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "sampling/createMessage: " + err.Error()}
		}
		return session.CreateMessage(ctx, &p)
	case "roots/list":
		var p mcp.ListRootsParams
		if err := json.Unmarshal([]byte(q.GetParams()), &p); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "roots/list: " + err.Error()}
		}
		return session.ListRoots(ctx, &p)
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("%q is not a question the endpoint can ask its client", q.GetMethod())}
}

// answerError is the refusal a failed ask passes to the server: the
// client's own JSON-RPC error, else -32601 when it cannot be asked this
// (the SDK refuses before asking a client that did not declare it).
func answerError(err error) *mailboxv1.AnswerError {
	msg := err.Error()
	if len(msg) > contract.MaxAnswerMessage {
		msg = strings.ToValidUTF8(msg[:contract.MaxAnswerMessage], "")
	}
	if rpcErr, ok := errors.AsType[*jsonrpc.Error](err); ok {
		return &mailboxv1.AnswerError{Code: int32(rpcErr.Code), Message: msg}
	}
	return &mailboxv1.AnswerError{Code: int32(jsonrpc.CodeMethodNotFound), Message: msg}
}
