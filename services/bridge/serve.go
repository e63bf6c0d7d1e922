package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/capture"
	"github.com/switchboard-run/switchboard/kit/jsontext"
	"github.com/switchboard-run/switchboard/services/bridge/internal/results"
	"github.com/switchboard-run/switchboard/services/bridge/internal/upstream"
)

// registryPeer is what the bridge asks of the registry.
type registryPeer interface {
	Advertise(ctx context.Context, in *registryv1.AdvertiseRequest, opts ...grpc.CallOption) (*registryv1.AdvertiseResponse, error)
}

// mailboxPeer is what the bridge asks of the mailbox: it serves its mounted
// servers' queues like any tool host.
type mailboxPeer interface {
	Follow(ctx context.Context, in *mailboxv1.FollowRequest, opts ...grpc.CallOption) (grpc.ServerStreamingClient[mailboxv1.FollowResponse], error)
	Complete(ctx context.Context, in *mailboxv1.CompleteRequest, opts ...grpc.CallOption) (*mailboxv1.CompleteResponse, error)
}

type peers struct {
	reg registryPeer
	mb  mailboxPeer
}

// Redial backoff for a Follow stream that broke (the mailbox restarted, the
// network blinked): it settles instead of spinning.
const (
	followBackoff    = 500 * time.Millisecond
	followMaxBackoff = 30 * time.Second
)

// follow holds the server's Follow stream while the run lasts, reopening it
// when it breaks.
func (m *mount) follow(ctx context.Context, h host) {
	backoff := followBackoff
	for {
		opened, err := m.followOnce(ctx, h)
		if ctx.Err() != nil {
			return
		}
		if opened {
			backoff = followBackoff
		}
		m.fault(fmt.Sprintf("following the mailbox: %s; again in %v", message(err), backoff))
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(backoff*2, followMaxBackoff)
	}
}

// followOnce opens one Follow stream and serves it until it ends.
func (m *mount) followOnce(ctx context.Context, h host) (opened bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := m.peers.mb.Follow(m.as(ctx), &mailboxv1.FollowRequest{Session: &m.session})
	if err != nil {
		return false, err
	}
	first, err := stream.Recv()
	if err != nil {
		return false, err
	}
	if first.GetOpened() == nil {
		return false, fmt.Errorf("the stream's first event was %v, not opened", first)
	}
	// The read is held under our session now: re-present the set, so a
	// registry that restarted, or a set changed while we were away, is right.
	m.advertise(ctx)
	for {
		ev, err := stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errors.New("the mailbox ended the stream")
			}
			return true, err
		}
		switch e := ev.GetEvent().(type) {
		case *mailboxv1.FollowResponse_Invocation:
			m.dispatch(ctx, h, e.Invocation)
		case *mailboxv1.FollowResponse_Cancelled:
			m.cancelCall(e.Cancelled.GetInvocation())
		}
	}
}

// dispatch hands one invocation to the host, in the order the stream
// delivered it, and answers it from a goroutine of its own. Reading the
// stream never waits for a call, so a cancel for a running call is seen at
// once.
func (m *mount) dispatch(runCtx context.Context, h host, inv *mailboxv1.Invocation) {
	id := inv.GetInvocation()
	m.mu.Lock()
	if _, running := m.calls[id]; running {
		// A redelivery (same id: the idempotency key) of a call still running
		// here: the running one will answer it.
		m.mu.Unlock()
		return
	}
	// Not derived from runCtx: when the session dies, calls already sent
	// fail on their own and are answered; only a cancel or a stopping mount
	// ends them unanswered.
	callCtx, cancel := context.WithCancel(m.ctx)
	m.calls[id] = cancel
	m.wg.Add(1)
	m.mu.Unlock()
	serve := h.accept(runCtx, callCtx, inv)
	go func() {
		defer m.wg.Done()
		defer func() {
			m.mu.Lock()
			delete(m.calls, id)
			m.mu.Unlock()
			cancel()
		}()
		if c, answer := serve(); answer {
			m.complete(id, c)
		}
	}()
}

// serve runs one invocation upstream and maps its outcome. answer is false
// when there is nobody to answer: its poster cancelled it, or the mount is
// stopping (the mailbox leases it back to the next reader).
func (m *mount) serve(ctx context.Context, sess *upstream.Session, inv *mailboxv1.Invocation) (_ *mailboxv1.Capture, answer bool) {
	tool := inv.GetTool()
	m.mu.Lock()
	set := m.set
	m.mu.Unlock()
	// Refused before it is forwarded: some servers end the session over an
	// unknown tool.
	if set == nil || !set.Has(tool) {
		return capture.Failed(capture.ExitNotFound, "MCP server %q does not list a tool %q now, so it was not called", m.client, tool), true
	}
	if inv.Cwd != nil {
		return capture.Failed(capture.ExitError, "tool %q does not take a cwd: an MCP server is not told a working directory, so it was not called", tool), true
	}
	if err := jsontext.CheckObject("input", inv.GetInput()); err != nil {
		return capture.Failed(capture.ExitError, "MCP tool %q takes its arguments as a JSON object, but the %v; it was not called", tool, err), true
	}
	res, err := sess.Call(ctx, tool, json.RawMessage(inv.GetInput()), inv.GetInvocation())
	if ctx.Err() != nil {
		return nil, false
	}
	if err != nil {
		return results.FromError(err, m.client, tool, m.limit), true
	}
	return results.FromResult(res, m.limit), true
}

// complete posts a capture as the server's identity.
func (m *mount) complete(id string, c *mailboxv1.Capture) {
	ctx, cancel := context.WithTimeout(context.Background(), peerDeadline)
	defer cancel()
	_, err := m.peers.mb.Complete(m.as(ctx), &mailboxv1.CompleteRequest{Invocation: id, Capture: c})
	switch {
	case err == nil:
	case status.Code(err) == codes.NotFound:
		// Cancelled or expired meanwhile: nobody is waiting for it.
		m.log.Debug("capture not taken", "invocation", id, "err", message(err))
	default:
		m.fault(fmt.Sprintf("completing %s: %s", id, message(err)))
	}
}

// cancelCall ends a running or queued call whose poster cancelled it; the
// SDK tells the server with notifications/cancelled.
func (m *mount) cancelCall(id string) {
	m.mu.Lock()
	cancel, ok := m.calls[id]
	m.mu.Unlock()
	if ok {
		cancel()
		m.notice(fmt.Sprintf("invocation %s was cancelled by its poster", id))
	}
}

// advertise presents the current set under the server's identity and the
// follow session. The lock keeps advertisements in order, and each sends the
// newest set, so the last one to leave is always the current set.
func (m *mount) advertise(ctx context.Context) {
	m.advertiseMu.Lock()
	defer m.advertiseMu.Unlock()
	m.mu.Lock()
	set := m.set
	m.mu.Unlock()
	if set == nil || ctx.Err() != nil {
		return
	}
	if err := m.present(ctx, set.Tools); err != nil {
		m.fault(fmt.Sprintf("advertising %d tools: %s", len(set.Tools), message(err)))
	}
}

// withdraw advertises the empty set: the server's tools are gone until it
// is mounted again.
func (m *mount) withdraw() {
	m.advertiseMu.Lock()
	defer m.advertiseMu.Unlock()
	if err := m.present(context.Background(), nil); err != nil {
		m.fault(fmt.Sprintf("withdrawing the tools: %s", message(err)))
	}
}

// present sends one advertisement. A refusal that can pass is tried again
// a few times: the registry unreachable for a moment, or its serving guard
// still holding a read that has just closed (the mailbox reports presence
// asynchronously).
func (m *mount) present(ctx context.Context, tools []*registryv1.Tool) error {
	ctx, cancel := context.WithTimeout(ctx, peerDeadline)
	defer cancel()
	backoff := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		_, err := m.peers.reg.Advertise(m.as(ctx), &registryv1.AdvertiseRequest{Tools: tools, Session: &m.session})
		if err == nil {
			m.mu.Lock()
			m.advertised = len(tools)
			m.mu.Unlock()
			return nil
		}
		if c := status.Code(err); attempt == 5 || (c != codes.FailedPrecondition && c != codes.Unavailable) {
			return err
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		backoff *= 2
	}
}

// message is an error's sentence: a gRPC status's message alone.
func message(err error) string {
	if s, ok := status.FromError(err); ok {
		return s.Message()
	}
	return err.Error()
}
