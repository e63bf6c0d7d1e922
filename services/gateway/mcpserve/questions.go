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
// own client in the session and posts the answer (Answer), which reaches
// the bridge and the server.

// relaysQuestions reports whether the endpoint asks req's client the
// host's questions while the call runs: a client in a session (the era
// that takes server-to-client requests) that declared elicitation or
// sampling. A stateless client is asked with input_required results, by
// servers of its own era (inputrequired.go).
func relaysQuestions(req *mcp.CallToolRequest) bool {
	if req.Session == nil || req.Params == nil {
		return false
	}
	if _, stateless := req.Params.Meta[mcp.MetaKeyClientCapabilities]; stateless {
		return false
	}
	init := req.Session.InitializeParams()
	if init == nil || init.Capabilities == nil {
		return false
	}
	return init.Capabilities.Elicitation != nil || init.Capabilities.Sampling != nil
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
