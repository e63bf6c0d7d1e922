package mcpserve

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/lib/retry"
	"github.com/switchboard-run/switchboard/kit/suite/audit"
	"github.com/switchboard-run/switchboard/kit/suite/contract"
	"github.com/switchboard-run/switchboard/kit/suite/mailboxcall"
)

// MetaTimeout is the tools/call _meta key by which a client tells its own
// timeout, as a duration string ("20s"). MCP carries no deadline, so
// without it the call is bounded by the server's CallTimeout alone; with it
// (when shorter) the client gets its result, or the handle of a call still
// running, before it gives up.
const MetaTimeout = "run.switchboard/timeout"

// cancelTimeout bounds the Cancel sent after the client went away.
const cancelTimeout = 5 * time.Second

// cancelReason is added to the cancelled capture's stderr sentence.
const cancelReason = "the MCP client cancelled the tools/call request"

// handler is the tools/call handler of one presented tool.
//
// One request to the mailbox per call: its Call, which posts and waits.
// Call names the invocation's handle in a response header before it posts,
// so a cancellation (the handler's context ending) still becomes a mailbox
// Cancel of that handle, which the host hears on its follow stream. The
// Call itself is never cut short by the client: an invocation is never
// left running unnamed.
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
		rpc, cancel := context.WithDeadline(context.WithoutCancel(as), deadline)
		defer cancel()
		var header http.Header
		if req.Extra != nil {
			header = req.Extra.Header
		}
		if rpc, err = withIdempotencyKey(rpc, header); err != nil {
			return refusal(status.Convert(err).Message()), nil
		}
		level := m.levels.level(req)
		asks := askingOf(req)
		var call *running
		var after int64 // the notes read before this request (resume.go)
		if id, seen, ok, err := resumed(req.Params.RequestState, name); err != nil || ok {
			if err != nil {
				return refusal(err.Error()), nil
			}
			if res := m.answerInputs(rpc, name, id, req.Params.InputResponses); res != nil {
				return res, nil
			}
			call, after = m.resumeCall(rpc, id), seen
		} else {
			params, err := mcpParams(req, level, asks)
			if err != nil {
				return refusal("the call's input responses could not be passed on: " + err.Error()), nil
			}
			call = m.startCall(rpc, &mailboxv1.CallRequest{Client: e.client, Tool: e.def.GetName(), Input: input, McpParams: params})
		}
		stop := nameFirst(ctx, call)
		defer stop()
		var relay *noteRelay
		var inputs <-chan *mailboxv1.ProgressNote
		if token := req.Params.GetProgressToken(); (token != nil || level != "" || asks != askNone) && (req.Session != nil || asks == askResult) {
			// Only a call that asks for progress or log messages, or whose
			// client can be asked, reads its notes: the hot path stays one
			// request to the mailbox (progress.go).
			relay = m.relayNotes(as, req.Session, token, level != "", asks, call, after)
			defer relay.stop()
			inputs = relay.inputs
		}
		var r callResult
		select {
		case r = <-call.done:
		case n := <-inputs:
			return inputRequest(name, call.handle(), n, inputs), nil
		case <-ctx.Done():
			// The client went away: cancel by the handle, once the mailbox
			// named it (at once, unless the call failed before its post).
			if id := call.handle(); id != "" {
				return m.cancelled(as, id, call.done)
			}
			r = <-call.done
		}
		if r.broken {
			if id := call.handle(); id != "" {
				done := m.recollect(rpc, id, r.err)
				select {
				case r = <-done:
				case <-ctx.Done():
					return m.cancelled(as, id, done)
				}
			}
		}
		id := r.res.GetInvocation()
		switch {
		case r.res.GetCapture() != nil: // answered, even if the client has just gone: nothing to cancel
			if relay != nil {
				relay.finish(r.notes)
			}
			if err := serverError(r.res.GetCapture()); err != nil {
				return nil, err
			}
			if ask := inputRequired(r.res.GetCapture()); ask != nil {
				return ask, nil
			}
			if raw := passThrough(ctx, r.res.GetCapture()); raw != nil {
				return &raw.CallToolResult, nil
			}
			return fromCapture(r.res.GetCapture(), hasOutputSchema), nil
		case r.err == nil || status.Code(r.err) == codes.DeadlineExceeded:
			if id == "" {
				id = call.handle()
			}
			return refusal(fmt.Sprintf("tool %q is still running as invocation %s after %v; collect its capture later with: switchboard capture %s --wait 60s",
				name, id, timeout, id)), nil
		}
		if id = call.handle(); id == "" {
			return refusal(status.Convert(r.err).Message()), nil // refused before it was posted
		}
		return refusal(fmt.Sprintf("invocation %s of tool %q: %s", id, name, status.Convert(r.err).Message())), nil
	}
}

// IdempotencyHeader is the HTTP header in which a client names a
// tools/call's idempotency key: a retry with it is answered with the first
// call's result, and the tool does not run again.
const IdempotencyHeader = "Idempotency-Key"

// withIdempotencyKey carries the client's idempotency keys, if header
// holds any, to the mailbox (which refuses more than one), refusing one
// gRPC could not send.
func withIdempotencyKey(ctx context.Context, header http.Header) (context.Context, error) {
	for _, k := range header.Values(IdempotencyHeader) {
		if err := contract.CheckIdempotencyKey(k); err != nil {
			return ctx, err
		}
		ctx = metadata.AppendToOutgoingContext(ctx, contract.IdempotencyKey, k)
	}
	return ctx, nil
}

// running is one mailbox Call in flight.
type running struct {
	named chan struct{}   // closed once a handle was named, or the call ended without one
	once  sync.Once       // closes named
	mu    sync.Mutex      // guards id
	id    string          // the latest handle named (a Call refused unposted is made again); "" when none came
	done  chan callResult // the reply
}

type callResult struct {
	res *mailboxv1.CallResponse
	// notes are the invocation's notes the answer carried (NotesTrailer).
	notes []*mailboxv1.ProgressNote
	err   error
	// broken marks a call whose connection to the mailbox broke, as
	// against an error the mailbox answered (recollect.go).
	broken bool
}

// handle waits for the handle the mailbox names, and returns it, or ""
// when the call ended without naming one. Any number of readers may ask.
func (c *running) handle() string {
	<-c.named
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.id
}

func (c *running) name(id string) {
	c.mu.Lock()
	c.id = id
	c.mu.Unlock()
	c.once.Do(func() { close(c.named) })
}

// startCall makes the mailbox's Call under ctx, which the client's
// cancellation does not end, reading its handle from the Call's header
// while it runs (kit/suite/mailboxcall).
func (m *Mirror) startCall(ctx context.Context, req *mailboxv1.CallRequest) *running {
	c := &running{named: make(chan struct{}), done: make(chan callResult, 1)}
	ctx = audit.WithFront(ctx, "mcp")
	m.calls.Go(func() {
		defer c.once.Do(func() { close(c.named) })
		var trailer metadata.MD
		res, err := mailboxcall.InvokeNamed(ctx, m.mailbox.ClientConnInterface, req, c.name, grpc.Trailer(&trailer))
		if err != nil {
			c.done <- callResult{err: err, broken: mailboxcall.Broken(err, trailer)}
			return
		}
		c.done <- callResult{res: res, notes: contract.Notes(trailer)}
	})
	return c
}

// cancelled cancels id for its poster once the client went away, and maps
// the capture the cancel leaves (exit 130, or the answer that won the
// race). A call that ended meanwhile with its capture answers with that.
func (m *Mirror) cancelled(as context.Context, id string, done <-chan callResult) (*mcp.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(as), cancelTimeout)
	defer cancel()
	var got *mailboxv1.Capture
	ended := false
	err := untilStored(ctx, func(ctx context.Context) error {
		res, err := m.mailbox.Cancel(ctx, &mailboxv1.CancelRequest{Invocation: id, Reason: proto.String(cancelReason)})
		switch {
		case err == nil:
			got = res.GetCapture()
			return nil
		case ended: // the call ended without a capture: this try said which
			return retry.Stop(err)
		}
		select {
		case r := <-done:
			if got = r.res.GetCapture(); got != nil {
				return nil
			}
			ended = true // its post failed, or it still runs after its time
		default:
		}
		return err
	})
	if err == nil {
		return fromCapture(got, false), nil
	}
	m.log.Warn("cancelling an invocation the MCP client gave up on failed", "invocation", id, "err", err)
	return refusal(fmt.Sprintf("invocation %s was not cancelled: %s", id, status.Convert(err).Message())), nil
}

// untilStored calls attempt until it finds its invocation: the mailbox
// names a Call's handle before it stores the post, so NOT_FOUND is asked
// again, soon, until ctx ends.
func untilStored(ctx context.Context, attempt func(context.Context) error) error {
	return retry.Loop{Policy: storedPolicy, Retryable: func(err error) bool { return status.Code(err) == codes.NotFound }}.Do(ctx, attempt)
}

// storedPolicy paces untilStored: a post is stored within milliseconds.
var storedPolicy = retry.Policy{Base: 2 * time.Millisecond, Max: 20 * time.Millisecond, Multiplier: 2}

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
