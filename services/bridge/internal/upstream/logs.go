package upstream

import (
	"encoding/json"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-run/switchboard/kit/suite/contract"
)

// A server's log messages during a call reach the call's driver when it
// asked for them (ClientParams' logLevel). MCP does not say which request
// a notifications/message belongs to, so the bridge gives a message to a
// call only while that call is the session's one call in flight; with
// more, it could be any caller's, and stays with the mount's notices. The
// transports hear each message in order with the replies (heardLog).

// Hearing is what a call hears of the server while it runs.
type Hearing struct {
	// Progress hears the call's notifications/progress.
	Progress func(*mcp.ProgressNotificationParams)
	// Log hears the server's log messages at Level and above.
	Log   func(*mcp.LoggingMessageParams)
	Level mcp.LoggingLevel
	// Ask asks the call's driver a request the server made of its client
	// (asks.go) and returns the answer's result; nil: the driver cannot be
	// asked.
	Ask askFunc
}

// running counts a call in flight, as the one that hears log messages
// while alone, until the returned function is called.
func (s *Session) running(hear *Hearing) (done func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if hear != nil && (hear.Log != nil || hear.Ask != nil) {
		s.hearing[hear] = true
	}
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.calls--
		delete(s.hearing, hear)
	}
}

// heardLog takes the params of a log message as the transport reads them,
// in order with the replies (the SDK's own handler hears it later, too
// late for a call that has been answered meanwhile).
func (s *Session) heardLog(params json.RawMessage) {
	var p mcp.LoggingMessageParams
	if json.Unmarshal(params, &p) == nil {
		s.hearLog(&p)
	}
}

// hearLog gives p to the one call in flight, when it is alone and asked
// for messages of p's level.
func (s *Session) hearLog(p *mcp.LoggingMessageParams) {
	s.mu.Lock()
	var to *Hearing
	if s.calls == 1 {
		for h := range s.hearing {
			to = h
		}
	}
	s.mu.Unlock()
	if to != nil && to.Log != nil && slices.Index(contract.LogLevels, string(p.Level)) >= slices.Index(contract.LogLevels, string(to.Level)) {
		to.Log(p)
	}
}
