package mcpserve

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
)

// MetaTimeout is the tools/call _meta key by which a client tells its own
// timeout, as a duration string ("20s"). MCP carries no deadline, so
// without it the call is bounded by the server's CallTimeout alone; with it
// (when shorter) the client gets its result, or the handle of a call still
// running, before it gives up.
const MetaTimeout = "run.switchboard/timeout"

// maxCaptureWait is the longest wait one mailbox Capture takes (docs/design.md §3).
const maxCaptureWait = 60 * time.Second

// cancelTimeout bounds the Cancel sent after the client went away.
const cancelTimeout = 5 * time.Second

// cancelReason is added to the cancelled capture's stderr sentence.
const cancelReason = "the MCP client cancelled the tools/call request"

// handler is the tools/call handler of one presented tool.
//
// Why Invoke then Capture rather than the mailbox's Call: Call returns the
// invocation handle only when it ends, so a call the MCP client cancels
// could not be named to Cancel. Posting first gives the handle at once; the
// capture is then collected with waits bounded by the deadline, and a
// cancellation (the handler's context ending) becomes a mailbox Cancel of
// that handle, which the host hears on its follow stream.
func (m *Mirror) handler(name string, e entry) mcp.ToolHandler {
	hasOutputSchema := e.def.OutputSchema != nil
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		timeout, err := m.timeout(req.Params.GetMeta())
		if err != nil {
			return refusal(err.Error()), nil
		}
		deadline := time.Now().Add(timeout)
		as, err := m.opts.As(ctx, req)
		if err != nil {
			return refusal(err.Error()), nil
		}
		input := string(req.Params.Arguments)
		if input == "" || input == "null" {
			input = "{}" // MCP lets a client omit the arguments of a tool that takes none
		}
		// The post itself is not cut short by a cancellation: Invoke returns
		// at once, and a post whose reply was lost would leave an invocation
		// running that nobody could name to cancel.
		post, cancelPost := context.WithDeadline(context.WithoutCancel(as), deadline)
		posted, err := m.opts.Mailbox.Invoke(post, &mailboxv1.InvokeRequest{Client: e.client, Tool: e.def.GetName(), Input: input})
		cancelPost()
		if err != nil {
			return refusal(status.Convert(err).Message()), nil
		}
		id := posted.GetInvocation()
		rpc, cancel := context.WithDeadline(as, deadline)
		defer cancel()
		c, err := m.collect(rpc, id, deadline, timeout)
		switch {
		case c != nil: // answered, even if the client has just gone: nothing to cancel
			return fromCapture(c, hasOutputSchema), nil
		case ctx.Err() != nil:
			return m.cancelled(as, id), nil
		case err == nil || errors.Is(err, context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded:
			return refusal(fmt.Sprintf("tool %q is still running as invocation %s after %v; collect its capture later with: switchboard capture %s --wait 60s",
				name, id, timeout, id)), nil
		}
		return refusal(fmt.Sprintf("invocation %s of tool %q: %s", id, name, status.Convert(err).Message())), nil
	}
}

// collect waits for the capture of id until a margin before deadline (the
// mailbox Call's margin: a tenth of the time, at most 250 ms), so that the
// answer reaches the client while it still listens. It returns nil and no
// error when the time is up first.
func (m *Mirror) collect(ctx context.Context, id string, deadline time.Time, timeout time.Duration) (*mailboxv1.Capture, error) {
	until := deadline.Add(-min(timeout/10, 250*time.Millisecond))
	for {
		wait := min(time.Until(until), maxCaptureWait)
		if wait <= 0 {
			return nil, nil
		}
		res, err := m.opts.Mailbox.Capture(ctx, &mailboxv1.CaptureRequest{Invocation: id, Wait: durationpb.New(wait)})
		if err != nil {
			return nil, err
		}
		if res.Capture != nil {
			return res.GetCapture(), nil
		}
	}
}

// cancelled cancels id for its poster once the client went away, and maps
// the capture the cancel leaves (exit 130, or the answer that won the race).
func (m *Mirror) cancelled(as context.Context, id string) *mcp.CallToolResult {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(as), cancelTimeout)
	defer cancel()
	res, err := m.opts.Mailbox.Cancel(ctx, &mailboxv1.CancelRequest{Invocation: id, Reason: proto.String(cancelReason)})
	if err != nil {
		m.log.Warn("cancelling an invocation the MCP client gave up on failed", "invocation", id, "err", err)
		return refusal(fmt.Sprintf("invocation %s was not cancelled: %s", id, status.Convert(err).Message()))
	}
	return fromCapture(res.GetCapture(), false)
}

// timeout is the call's bound: the server's, or the client's when it names
// a shorter one in _meta.
func (m *Mirror) timeout(meta mcp.Meta) (time.Duration, error) {
	limit := m.opts.callTimeout()
	v, ok := meta[MetaTimeout]
	if !ok {
		return limit, nil
	}
	s, isString := v.(string)
	d, err := time.ParseDuration(s)
	if !isString || err != nil || d <= 0 {
		return 0, fmt.Errorf(`_meta %q must be a positive duration such as "20s", not %v`, MetaTimeout, quoted(v))
	}
	return min(d, limit), nil
}

func quoted(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%v", v)
}
