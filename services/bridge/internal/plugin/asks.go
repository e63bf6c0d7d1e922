package plugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/switchboard-run/switchboard/kit/lib/rawjson"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
	"github.com/switchboard-run/switchboard/kit/suite/contract"
)

// A backend asks the driver of the request in flight as an MCP server
// would (docs/plugins.md, "Questions"): an "ask" line with its own key, an
// MCP method and params; the bridge answers with an "answer" line under the
// same key, carrying the driver's result or an error.

// answerMsg is the bridge's answer to a backend's ask.
type answerMsg struct {
	Type   string          `json:"type"`
	ID     int64           `json:"id"`
	Key    string          `json:"key"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *askError       `json:"error,omitempty"`
}

type askError struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
}

// cannotBeAsked is the answer when the call's driver cannot be asked.
const cannotBeAsked = "the call's agent cannot be asked: it declared no such capability, or it reads results only (act, REST, gRPC); the call must finish without asking"

// ask passes a backend's question about the request in flight to its
// driver, on a goroutine of its own, and writes the answer back; a
// malformed ask, or one about another request, is answered at once.
func (b *Backend) ask(msg message) {
	id, ok := msg.id()
	b.mu.Lock()
	c, p := b.inflight, b.proc
	b.mu.Unlock()
	if !ok || c == nil || c.id != id {
		b.opts.OnNotice(fmt.Sprintf("ignored an ask about request %s, which is not in flight", msg.text("id")))
		return
	}
	key, method := msg.text("key"), msg.text("method")
	answer := answerMsg{Type: "answer", ID: id, Key: key}
	var params string
	if msg.has("params") {
		params = string(msg.fields["params"])
	}
	switch {
	case key == "" || len(key) > 64:
		answer.Error = &askError{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("ask: key %q is not 1–64 bytes", capture.Cap(key, 80))}
	case !slices.Contains(contract.QuestionMethods, method):
		answer.Error = &askError{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("ask: method %q is not one a driver can be asked (elicitation/create, sampling/createMessage, roots/list)", capture.Cap(method, 80))}
	case len(params) > contract.MaxQuestionParams:
		answer.Error = &askError{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("ask: params are %d bytes, over the %d a question may hold", len(params), contract.MaxQuestionParams)}
	case rawjson.CheckObject("params", params) != nil:
		answer.Error = &askError{Code: jsonrpc.CodeInvalidParams, Message: "ask: " + rawjson.CheckObject("params", params).Error()}
	case c.ask == nil:
		answer.Error = &askError{Code: jsonrpc.CodeMethodNotFound, Message: method + ": " + cannotBeAsked}
	}
	if answer.Error != nil {
		b.write(p, answer)
		return
	}
	go func() {
		res, err := c.ask(c.ctx, method, json.RawMessage(params))
		if rpcErr, ok := errors.AsType[*jsonrpc.Error](err); ok {
			answer.Error = &askError{Code: rpcErr.Code, Message: rpcErr.Message}
		} else if err != nil {
			answer.Error = &askError{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("%s: the call's agent was asked, but no answer came: %v", method, err)}
		}
		answer.Result = res
		b.mu.Lock()
		still := b.inflight == c && b.proc == p
		b.mu.Unlock()
		if still { // else the call ended meanwhile: nobody waits for the answer
			b.write(p, answer)
		}
	}()
}
