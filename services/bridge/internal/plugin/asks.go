package plugin

import (
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/switchboard-run/switchboard/kit/suite/contract"
)

// A backend asks the driver of the request in flight as an MCP server
// would (docs/plugins.md, "Questions"): an "ask" line with its own key, an
// MCP method and params; the bridge answers with an "answer" line under the
// same key, carrying the driver's result or an error.

// answerMsg is the bridge's answer to a backend's ask.
type answerMsg struct {
	Type   string             `json:"type"`
	ID     int64              `json:"id"`
	Key    string             `json:"key"`
	Result json.RawMessage    `json:"result,omitempty"`
	Error  *contract.AskError `json:"error,omitempty"`
}

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
	params := msg.fields["params"]
	if err := contract.CheckAsk(key, method, params); err != nil {
		answer.Error = &contract.AskError{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	} else if c.ask == nil {
		answer.Error = &contract.AskError{Code: jsonrpc.CodeMethodNotFound, Message: method + ": " + contract.CannotBeAsked}
	}
	if answer.Error != nil {
		b.write(p, answer)
		return
	}
	go func() {
		res, err := c.ask(c.ctx, method, params)
		answer.Result, answer.Error = res, contract.AskErrorOf(method, err)
		b.mu.Lock()
		still := b.inflight == c && b.proc == p
		b.mu.Unlock()
		if still { // else the call ended meanwhile: nobody waits for the answer
			b.write(p, answer)
		}
	}()
}
