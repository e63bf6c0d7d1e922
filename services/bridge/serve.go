package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/lib/rawjson"
	"github.com/switchboard-run/switchboard/kit/lib/retry"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
	"github.com/switchboard-run/switchboard/kit/suite/contract"
	"github.com/switchboard-run/switchboard/kit/suite/follower"
	"github.com/switchboard-run/switchboard/services/bridge/internal/results"
	"github.com/switchboard-run/switchboard/services/bridge/internal/stdio"
	"github.com/switchboard-run/switchboard/services/bridge/internal/upstream"
)

// registryPeer is what the bridge asks of the registry.
type registryPeer interface {
	Advertise(ctx context.Context, in *registryv1.AdvertiseRequest, opts ...grpc.CallOption) (*registryv1.AdvertiseResponse, error)
}

type peers struct {
	reg registryPeer
	// mb is the mailbox: the bridge serves its mounted servers' queues like
	// any tool host.
	mb follower.Mailbox
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
	if err := rawjson.CheckObject("input", inv.GetInput()); err != nil {
		return capture.Failed(capture.ExitError, "MCP tool %q takes its arguments as a JSON object, but the %v; it was not called", tool, err), true
	}
	var from *upstream.ClientParams
	if inv.McpParams != nil {
		var err error
		if from, err = upstream.ParseClientParams(inv.GetMcpParams()); err != nil {
			return capture.Failed(capture.ExitError, "MCP tool %q was not called: %v", tool, err), true
		}
	}
	hear := &upstream.Hearing{Progress: upstreamProgress(follower.Progress(ctx))}
	if from != nil && from.Meta.LogLevel != "" {
		hear.Log, hear.Level = upstreamLog(follower.Log(ctx)), from.Meta.LogLevel
	}
	if from != nil && from.Meta.Answers {
		hear.Ask = follower.Asker(ctx, inv.GetDelivery())
	}
	callCtx, whole := stdio.KeepWhole(ctx)
	res, err := sess.Call(callCtx, tool, json.RawMessage(inv.GetInput()), from, inv.GetInvocation(), hear)
	if o, ok := follower.Overran(ctx); ok {
		return capture.Failed(capture.ExitTimeout, "MCP tool %q of %q was stopped and cancelled upstream: %v", tool, m.client, o), true
	}
	if ctx.Err() != nil {
		return nil, false
	}
	if err != nil {
		return results.FromError(err, m.client, tool, m.limit), true
	}
	return results.FromWhole(res, whole.JSON, m.limit), true
}

// upstreamProgress turns a server's notifications/progress into the run's
// progress notes (a total of 0 is MCP's "unknown", as it is the note's).
func upstreamProgress(report func(follower.Note)) func(*mcp.ProgressNotificationParams) {
	return func(p *mcp.ProgressNotificationParams) {
		report(follower.Note{Progress: p.Progress, Total: p.Total, Message: p.Message})
	}
}

// upstreamLog turns a server's log message into the run's log note; data
// too large for a note is replaced by a sentence saying so.
func upstreamLog(report func(*mailboxv1.LogMessage)) func(*mcp.LoggingMessageParams) {
	return func(p *mcp.LoggingMessageParams) {
		data, err := json.Marshal(p.Data)
		if err != nil || len(data) > contract.MaxLogData {
			data, _ = json.Marshal(fmt.Sprintf("[a log message of %d bytes, more than the %d passed on to the caller]", len(data), contract.MaxLogData))
		}
		logger := p.Logger
		if len(logger) > contract.MaxLogLogger {
			logger = strings.ToValidUTF8(logger[:contract.MaxLogLogger], "")
		}
		report(&mailboxv1.LogMessage{Level: string(p.Level), Logger: logger, Data: string(data)})
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
// asynchronously). Its waits are its own and short (50 ms doubling, five
// tries): that race closes within milliseconds, and a Mount waits on it.
func (m *mount) present(ctx context.Context, tools []*registryv1.Tool) error {
	ctx, cancel := context.WithTimeout(ctx, peerDeadline)
	defer cancel()
	send := retry.Loop{
		Policy: retry.Policy{Base: 50 * time.Millisecond, Max: 400 * time.Millisecond, Multiplier: 2, Jitter: 0.2},
		Tries:  5,
		Retryable: func(err error) bool {
			c := status.Code(err)
			return c == codes.FailedPrecondition || c == codes.Unavailable
		},
	}
	err := send.Do(ctx, func(ctx context.Context) error {
		_, err := m.peers.reg.Advertise(m.as(ctx), &registryv1.AdvertiseRequest{Tools: tools, Session: &m.session})
		return err
	})
	if err == nil {
		m.mu.Lock()
		m.advertised = len(tools)
		m.mu.Unlock()
	}
	return err
}

// message is an error's sentence: a gRPC status's message alone.
func message(err error) string {
	if s, ok := status.FromError(err); ok {
		return s.Message()
	}
	return err.Error()
}
