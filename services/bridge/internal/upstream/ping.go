package upstream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/switchboard-run/switchboard/services/bridge/internal/child"
)

// Defaults of the liveness ping (docs/design.md §5).
const (
	DefaultPingInterval = 30 * time.Second
	DefaultPingTimeout  = 10 * time.Second
)

// pingLoop sends the server an MCP ping every interval. A server that is
// alive but stuck would hold every call sent to it until its deadline, and
// a dead HTTP server may never close anything: one ping unanswered within
// timeout ends the Session, which the supervisor counts as a crash.
func (s *Session) pingLoop(interval, timeout time.Duration) {
	defer s.wg.Done()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-s.life.Done():
			return
		case <-s.done:
			return
		case <-tick.C:
		}
		s.mu.Lock()
		cs := s.cs
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(s.life, timeout)
		err := cs.Ping(ctx, nil)
		late := ctx.Err() != nil && s.life.Err() == nil
		cancel()
		// Any JSON-RPC answer, even an error, is an answer: the server
		// reads and writes. Only silence, or a transport that failed, is not.
		var rpc *jsonrpc.Error
		if err == nil || s.life.Err() != nil || errors.As(err, &rpc) {
			continue
		}
		if late {
			s.fail(fmt.Errorf("the server did not answer a ping within %v, so it counts as crashed", timeout))
		} else {
			s.fail(fmt.Errorf("a ping to the server failed (%v), so it counts as crashed", err))
		}
		return
	}
}

// fail ends the Session with err and ends the SDK session under it, so the
// calls still waiting on the server fail at once rather than at their
// deadlines: the process (and its group) killed, the session closed.
func (s *Session) fail(err error) {
	s.finish(err)
	s.mu.Lock()
	cs, cmd := s.cs, s.cmd
	s.mu.Unlock()
	child.KillGroup(cmd)
	_ = cs.Close()
}
