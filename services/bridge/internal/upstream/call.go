package upstream

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-run/switchboard/services/bridge/internal/child"
)

// LogLevel is the least severe log message the bridge asks servers for.
const LogLevel = "info"

// Call runs tools/call with args (a JSON object, passed verbatim) and from
// (what the driver's client sent beyond name and arguments, when not nil).
// A progressToken asks for progress, heard at Options.OnNotice and hear's
// Progress; hear's Log hears the call's log messages. hear's functions run
// on the SDK's reading goroutine and must not block. Ending ctx cancels the
// call upstream. A JSON-RPC error wraps *jsonrpc.Error; a tool's own
// failure is a result with IsError set. A driver that resolves (a Task)
// is asked a server's input_required result during the run (resolve.go).
func (s *Session) Call(ctx context.Context, name string, args json.RawMessage, from *ClientParams, progressToken string, hear *Hearing) (*mcp.CallToolResult, error) {
	if progressToken != "" && hear != nil && hear.Progress != nil {
		s.watchProgress(progressToken, hear.Progress)
		defer s.unwatchProgress(progressToken)
	}
	defer s.running(hear)()
	call := func(from *ClientParams) (*mcp.CallToolResult, error) {
		return s.call(ctx, name, args, from, progressToken)
	}
	res, err := call(from)
	if err != nil || !from.resolves() || hear == nil || hear.Ask == nil {
		return res, err
	}
	return resolveInput(ctx, res, from, hear.Ask, call)
}

// call makes one tools/call of the server.
func (s *Session) call(ctx context.Context, name string, args json.RawMessage, from *ClientParams, progressToken string) (*mcp.CallToolResult, error) {
	s.mu.Lock()
	cs, gen, rev := s.cs, s.gen, s.info.ProtocolVersion
	s.mu.Unlock()
	res, err := cs.CallTool(ctx, callParams(name, args, from, rev, progressToken))
	if err == nil || !s.http || !errors.Is(err, mcp.ErrSessionMissing) || ctx.Err() != nil {
		return res, err
	}
	// The server forgot the session (404), so it never ran the call:
	// re-initialise, then retry once.
	if rerr := s.reinit(gen); rerr != nil {
		return nil, err
	}
	s.mu.Lock()
	cs, rev = s.cs, s.info.ProtocolVersion
	s.mu.Unlock()
	return cs.CallTool(ctx, callParams(name, args, from, rev, progressToken))
}

// callParams builds fresh params: the SDK adds to their _meta as it sends,
// keeping what is there. A server of the stateless era (rev) reads the
// client's capabilities from each request: it gets the driver's client's
// (none when it sent none), never the bridge's own. An older server reads
// the bridge's, from its session, and asks the bridge (asks.go).
func callParams(name string, args json.RawMessage, from *ClientParams, rev, progressToken string) *mcp.CallToolParams {
	p := &mcp.CallToolParams{Name: name, Arguments: args, Meta: mcp.Meta{mcp.MetaKeyLogLevel: LogLevel}}
	if progressToken != "" {
		p.SetProgressToken(progressToken)
	}
	if rev >= statelessRevision {
		p.Meta[mcp.MetaKeyClientCapabilities] = from.capabilities()
	}
	if from != nil {
		p.InputResponses, p.RequestState = from.InputResponses, from.RequestState
		if from.Meta.LogLevel != "" {
			p.Meta[mcp.MetaKeyLogLevel] = from.Meta.LogLevel
		}
	}
	return p
}

// Tools returns the server's current tools, as last listed.
func (s *Session) Tools() []*mcp.Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tools
}

// Info returns what the current session's server said about itself.
func (s *Session) Info() Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.info
}

// PID is the stdio server's process id, or 0.
func (s *Session) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Done is closed when the session has ended for good.
func (s *Session) Done() <-chan struct{} { return s.done }

// Err says why the session ended; nil while it runs.
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close ends the session: a stdio server's stdin is closed and the process
// (and its group) stopped; an HTTP session is ended with DELETE. Safe to
// call more than once.
func (s *Session) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	cs, cmd := s.cs, s.cmd
	s.mu.Unlock()
	s.end()
	// Wait out a re-initialisation in progress, so its session is the one
	// closed here rather than left behind.
	s.reinitMu.Lock()
	s.mu.Lock()
	cs = s.cs
	s.mu.Unlock()
	s.reinitMu.Unlock()
	err := cs.Close()
	child.KillGroup(cmd)
	s.wg.Wait()
	s.finish(ErrClosed)
	return err
}
