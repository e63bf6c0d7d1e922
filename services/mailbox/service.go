package mailbox

import (
	"context"
	"regexp"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/lib/rawjson"
	"github.com/switchboard-run/switchboard/kit/suite/audit"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
	"github.com/switchboard-run/switchboard/kit/suite/contract"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/names"
	"github.com/switchboard-run/switchboard/kit/suite/telemetry"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
)

const (
	maxReadHold    = 30 * time.Second
	maxCaptureWait = 60 * time.Second
)

var sessionRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// Invoke queues one call and returns the handle at once; a retry with the
// idempotency key of an earlier Invoke returns that one's handle.
func (s *Service) Invoke(ctx context.Context, req *mailboxv1.InvokeRequest) (*mailboxv1.InvokeResponse, error) {
	key, p, err := s.admit(ctx, req.GetClient(), req.GetTool(), req.GetInput(), req.Cwd, req.McpParams, req.Timeout)
	if err != nil {
		return nil, err
	}
	var k keyed
	if key != "" {
		var cancel context.CancelFunc
		ctx, cancel = whole(ctx)
		defer cancel()
		if k, err = s.claimKey(ctx, key, p); err != nil {
			return nil, err
		}
		if !k.claim.Mine {
			return &mailboxv1.InvokeResponse{Invocation: k.claim.Invocation}, nil
		}
	}
	if err := s.post(ctx, p); err != nil {
		if key != "" {
			s.release(ctx, k)
		}
		s.refused(ctx, p.Client, p.Tool, p.Input, p.Cwd, err)
		return nil, err
	}
	return &mailboxv1.InvokeResponse{Invocation: p.ID}, nil
}

// admit reads a post's idempotency key and checks the post, counting and
// auditing a refusal.
func (s *Service) admit(ctx context.Context, client, tool, input string, cwd, mcpParams *string, timeout *durationpb.Duration) (string, inflight.Post, error) {
	key, err := idempotencyKey(ctx)
	if err != nil {
		return "", inflight.Post{}, err
	}
	p, err := s.check(ctx, client, tool, input, cwd, mcpParams, timeout)
	if err != nil {
		s.refused(ctx, client, tool, input, cwd, err)
	}
	return key, p, err
}

// post queues a checked invocation.
func (s *Service) post(ctx context.Context, p inflight.Post) error {
	if err := s.held.reserve(p); err != nil {
		return err
	}
	if err := s.box.Post(ctx, p); err != nil {
		s.held.ledger.Release(p.ID, p.Poster)
		return err
	}
	s.posted(p)
	return nil
}

// check refuses an invocation that may not be posted, and names it. The
// one substantive check is that the client advertises the tool right now,
// in a workspace the caller may see; presence is not checked.
func (s *Service) check(ctx context.Context, client, tool, input string, cwd, mcpParams *string, timeout *durationpb.Duration) (inflight.Post, error) {
	caller, err := identity.Caller(ctx)
	if err != nil {
		return inflight.Post{}, err
	}
	if err := names.CheckClient(client); err != nil {
		return inflight.Post{}, status.Error(codes.InvalidArgument, "invoke: "+err.Error())
	}
	switch {
	case tool == "":
		return inflight.Post{}, status.Error(codes.InvalidArgument, `missing field "tool"`)
	case input == "":
		return inflight.Post{}, status.Error(codes.InvalidArgument, `missing field "input": send the tool's input as JSON text, e.g. "{}"`)
	}
	if len(input) > s.bounds.MaxInputBytes {
		return inflight.Post{}, status.Errorf(codes.ResourceExhausted,
			"input: %d bytes is more than the %d this mailbox takes for one invocation (--max-input-bytes)", len(input), s.bounds.MaxInputBytes)
	}
	if mcpParams != nil {
		if n := len(input) + len(*mcpParams); n > s.bounds.MaxInputBytes {
			return inflight.Post{}, status.Errorf(codes.ResourceExhausted,
				"input and mcp_params: %d bytes together is more than the %d this mailbox takes for one invocation (--max-input-bytes)", n, s.bounds.MaxInputBytes)
		}
		if err := rawjson.CheckObject("mcp_params", *mcpParams); err != nil {
			return inflight.Post{}, status.Error(codes.InvalidArgument, err.Error())
		}
	}
	if cwd != nil && len(*cwd) > maxCwdBytes {
		return inflight.Post{}, status.Errorf(codes.InvalidArgument, "cwd: %d bytes is more than the %d a path may hold", len(*cwd), maxCwdBytes)
	}
	if err := rawjson.Check("input", input); err != nil {
		return inflight.Post{}, status.Error(codes.InvalidArgument, err.Error())
	}
	if err := s.checkTimeout(timeout); err != nil {
		return inflight.Post{}, err
	}
	p := inflight.Post{ID: inflight.NewID(), Client: client, Poster: caller.Name, Tool: tool, Input: input, Cwd: cwd, MCPParams: mcpParams,
		Trace: telemetry.Inject(ctx), Front: audit.FrontOf(ctx)}
	if timeout != nil {
		p.Timeout = timeout.AsDuration()
		p.Deadline = time.Now().Add(p.Timeout)
	}
	// Outside the caller's workspaces a client is absent: the sentence is
	// the one of a tool nobody advertises (docs/design.md §4).
	sees, err := s.view.Sees(ctx, caller)
	if err != nil {
		return inflight.Post{}, err
	}
	ok, err := s.view.Reachable(ctx, client, tool, sees)
	if err != nil {
		return inflight.Post{}, err
	}
	if !ok {
		return inflight.Post{}, status.Errorf(codes.NotFound, "client %q advertises no tool %q right now", client, tool)
	}
	return p, nil
}

// checkTimeout refuses a driver's timeout that is not positive, or longer
// than the slot lives (--ttl): past that the invocation is gone anyway.
func (s *Service) checkTimeout(timeout *durationpb.Duration) error {
	if timeout == nil {
		return nil
	}
	if err := contract.ValidDuration("timeout", timeout); err != nil {
		return status.Error(codes.InvalidArgument, "invoke: "+err.Error())
	}
	d := timeout.AsDuration()
	switch {
	case d <= 0:
		return status.Errorf(codes.InvalidArgument, "invoke: timeout %v is not positive; leave it out for the host's own deadline", d)
	case d > s.bounds.TTL:
		return status.Errorf(codes.InvalidArgument, "invoke: timeout %v is longer than the %v this mailbox keeps an invocation (--ttl)", d, s.bounds.TTL)
	}
	return nil
}

// Complete stores a capture from the host the invocation was addressed to.
func (s *Service) Complete(ctx context.Context, req *mailboxv1.CompleteRequest) (*mailboxv1.CompleteResponse, error) {
	caller, err := identity.Caller(ctx)
	if err != nil {
		return nil, err
	}
	return s.complete(ctx, caller.Name, req)
}

// complete stores caller's capture: Complete's work, and a complete's on a
// Serve stream.
func (s *Service) complete(ctx context.Context, caller string, req *mailboxv1.CompleteRequest) (*mailboxv1.CompleteResponse, error) {
	c, err := strictCapture(req.GetCapture())
	if err != nil {
		return nil, err
	}
	stored, err := s.box.Complete(ctx, caller, req.GetInvocation(), c)
	if err != nil {
		return nil, err
	}
	s.held.captured(req.GetInvocation(), stored)
	s.changed(req.GetInvocation(), mailboxv1.Phase_PHASE_ANSWERED, &mailboxv1.InvocationState{Client: caller, ExitCode: &stored.ExitCode})
	return &mailboxv1.CompleteResponse{Invocation: req.GetInvocation(), Capture: toProto(&stored)}, nil
}

// strictCapture refuses a capture with a field missing: a capture is an
// instruction to a model, so nothing defaults silently. An MCP result must
// be a JSON object; the warning is the mailbox's own.
func strictCapture(c *mailboxv1.Capture) (inflight.Capture, error) {
	switch {
	case c == nil:
		return inflight.Capture{}, status.Error(codes.InvalidArgument, `missing field "capture"`)
	case c.Stdout == nil:
		return inflight.Capture{}, status.Error(codes.InvalidArgument, `capture: missing field "stdout"`)
	case c.Stderr == nil:
		return inflight.Capture{}, status.Error(codes.InvalidArgument, `capture: missing field "stderr"`)
	case c.ExitCode == nil:
		return inflight.Capture{}, status.Error(codes.InvalidArgument, `capture: missing field "exit_code"`)
	case c.Warning != nil:
		return inflight.Capture{}, status.Error(codes.InvalidArgument, `capture: "warning" is the mailbox's to set, not a host's`)
	case c.McpResult != nil && c.McpError != nil:
		return inflight.Capture{}, status.Error(codes.InvalidArgument, `capture: "mcp_result" and "mcp_error" exclude each other; a server answers one`)
	case c.McpResult != nil:
		if err := rawjson.CheckObject("capture: mcp_result", c.GetMcpResult()); err != nil {
			return inflight.Capture{}, status.Error(codes.InvalidArgument, err.Error())
		}
	case c.McpError != nil:
		if _, err := capture.ParseRPCError(c.GetMcpError()); err != nil {
			return inflight.Capture{}, status.Error(codes.InvalidArgument, err.Error())
		}
	}
	return inflight.CaptureOf(c), nil
}

// Capture collects a capture for its poster, waiting when asked.
func (s *Service) Capture(ctx context.Context, req *mailboxv1.CaptureRequest) (*mailboxv1.CaptureResponse, error) {
	caller, err := identity.Caller(ctx)
	if err != nil {
		return nil, err
	}
	var wait time.Duration
	if req.Wait != nil {
		if wait, err = duration("capture", req.Wait.AsDuration(), req.Wait.CheckValid(), maxCaptureWait); err != nil {
			return nil, err
		}
	}
	if k := req.GetRetryKey(); req.RetryKey != nil && !sessionRE.MatchString(k) {
		return nil, status.Errorf(codes.InvalidArgument, "capture: retry_key %q is not 1–64 chars of [A-Za-z0-9._-]", k)
	}
	c, err := s.box.Collect(ctx, caller.Name, req.GetInvocation(), wait, req.GetRetryKey())
	s.held.settled(req.GetInvocation(), caller.Name, c != nil, err)
	if err != nil {
		return nil, err
	}
	if c != nil {
		s.changed(req.GetInvocation(), mailboxv1.Phase_PHASE_COLLECTED, &mailboxv1.InvocationState{Poster: caller.Name, ExitCode: &c.ExitCode})
	}
	return &mailboxv1.CaptureResponse{Invocation: req.GetInvocation(), Capture: toProto(c)}, nil
}

// Call posts and waits. The wait ends a little before the caller's
// deadline, so the caller gets its handle back rather than a bare timeout.
// A retry with the idempotency key of an earlier Call collects that one.
func (s *Service) Call(ctx context.Context, req *mailboxv1.CallRequest) (*mailboxv1.CallResponse, error) {
	key, p, err := s.admit(ctx, req.GetClient(), req.GetTool(), req.GetInput(), req.Cwd, req.McpParams, req.Timeout)
	if err != nil {
		return nil, err
	}
	waitCtx := ctx
	if deadline, ok := ctx.Deadline(); ok {
		margin := min(time.Until(deadline)/10, 250*time.Millisecond)
		var cancel context.CancelFunc
		waitCtx, cancel = context.WithDeadline(ctx, deadline.Add(-margin))
		defer cancel()
	}
	if key == "" {
		return s.call(ctx, waitCtx, p)
	}
	posting, cancel := whole(ctx)
	defer cancel()
	k, err := s.claimKey(posting, key, p)
	switch {
	case err != nil:
		return nil, err
	case !k.claim.Mine:
		return s.callAgain(ctx, waitCtx, p.Poster, k) // a retry's wait ends with its caller
	}
	res, err := s.call(posting, waitCtx, p)
	switch {
	case status.Code(err) == codes.ResourceExhausted || contract.NotPosted(err): // refused before anything was posted
		s.release(ctx, k)
	case status.Code(err) == codes.NotFound: // a retry beside it took the answer, and keeps it
		if kept := s.kept(ctx, k); kept != nil {
			return &mailboxv1.CallResponse{Invocation: p.ID, Capture: kept}, nil
		}
	case res.GetCapture() != nil:
		s.keep(ctx, k, res.GetCapture())
	}
	return res, err
}

// call is Call's post and wait for a checked invocation.
func (s *Service) call(ctx, waitCtx context.Context, p inflight.Post) (*mailboxv1.CallResponse, error) {
	if err := s.held.reserve(p); err != nil {
		return nil, err
	}
	// The handle goes out before the post, as a header: a caller that may
	// have to cancel the call (the MCP endpoint, when its client gives up)
	// reads it from there while the call runs, and so needs no Invoke and
	// Capture of its own. A caller that ignores headers pays nothing: the
	// header is sent in any case, only sooner.
	_ = grpc.SendHeader(ctx, metadata.Pairs(contract.InvocationHeader, p.ID))
	s.posted(p) // told before it can be answered, so the phases arrive in order
	c, err := s.box.Call(ctx, waitCtx, p)
	// Released once taken, and on any failure: most are of the post (the
	// rest, NATS lost mid-wait, leave an invocation uncounted, not a
	// budget held for an hour by one that never queued).
	s.held.settled(p.ID, p.Poster, c != nil || err != nil, err)
	if err == nil && c == nil && waitCtx.Err() == nil {
		// The wait ended before its time with no answer: this replica is
		// shutting down (its drain closed the box). Said as a broken
		// connection is (no refused trailer): a durable invocation goes on
		// without this replica, and a call held by another replica too.
		return nil, status.Errorf(codes.Unavailable,
			"the mailbox replica is shutting down while invocation %s runs; collect its capture through another replica: switchboard capture %s --wait 60s", p.ID, p.ID)
	}
	if err != nil {
		_ = grpc.SetTrailer(ctx, metadata.Pairs(contract.RefusedTrailer, "1")) // the failing path only: the hot one sends no trailer
		return nil, err
	}
	if c != nil {
		s.changed(p.ID, mailboxv1.Phase_PHASE_COLLECTED, &mailboxv1.InvocationState{Poster: p.Poster, ExitCode: &c.ExitCode})
	}
	if c != nil && len(c.Notes) > 0 {
		_ = grpc.SetTrailer(ctx, contract.NotesMD(inflight.NotesProto(c.Notes)))
	}
	return &mailboxv1.CallResponse{Invocation: p.ID, Capture: toProto(c)}, nil
}

// Cancel abandons an invocation for its poster.
func (s *Service) Cancel(ctx context.Context, req *mailboxv1.CancelRequest) (*mailboxv1.CancelResponse, error) {
	caller, err := identity.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if n := len(req.GetReason()); n > s.bounds.MaxCancelReason {
		return nil, status.Errorf(codes.InvalidArgument, "cancel: the reason holds %d bytes; at most %d are kept (--max-cancel-reason)", n, s.bounds.MaxCancelReason)
	}
	c, err := s.box.Cancel(ctx, caller.Name, req.GetInvocation(), req.GetReason(), req.GetKeep())
	switch {
	case err == nil && req.GetKeep():
		// Kept, it holds its bytes until collected or expired, as an
		// answered one does.
		s.held.captured(req.GetInvocation(), c)
	default:
		s.held.settled(req.GetInvocation(), caller.Name, err == nil, err)
	}
	if err != nil {
		return nil, err
	}
	s.changed(req.GetInvocation(), mailboxv1.Phase_PHASE_CANCELLED, &mailboxv1.InvocationState{Poster: caller.Name, ExitCode: &c.ExitCode})
	return &mailboxv1.CancelResponse{Invocation: req.GetInvocation(), Capture: toProto(&c)}, nil
}

// duration checks a requested wait against its bound, naming the act.
func duration(act string, d time.Duration, invalid error, most time.Duration) (time.Duration, error) {
	switch {
	case invalid != nil:
		return 0, status.Errorf(codes.InvalidArgument, "%s: wait is not a valid duration: %v", act, invalid)
	case d < 0:
		return 0, status.Errorf(codes.InvalidArgument, "%s: wait %v is negative", act, d)
	case d > most:
		return 0, status.Errorf(codes.InvalidArgument, "%s: wait %v is longer than the %v allowed", act, d, most)
	}
	return d, nil
}

func toProto(c *inflight.Capture) *mailboxv1.Capture {
	if c == nil {
		return nil // absent while running: never an empty capture
	}
	return c.Proto()
}

// row is an invocation as its host is handed it. Its time left is until
// the driver's deadline or the slot's expiry, whichever is first: past
// either, nobody waits for its capture, so the host stops the run and an
// expired invocation is cancelled upstream like a cancelled one. It
// travels as a duration, so the host's clock need not agree with the
// mailbox's; one that passed meanwhile leaves a nanosecond.
func row(inv *inflight.Invocation) *mailboxv1.Invocation {
	r := &mailboxv1.Invocation{Invocation: inv.ID, Tool: inv.Tool, Input: inv.Input, Cwd: inv.Cwd, McpParams: inv.MCPParams, Delivery: inv.Delivery,
		TraceContext: inv.Trace}
	end := inv.Expires
	if !inv.Deadline.IsZero() && (end.IsZero() || !inv.Deadline.After(end)) {
		end = inv.Deadline
		r.Timeout = durationpb.New(inv.Timeout)
	}
	if !end.IsZero() {
		r.TimeLeft = durationpb.New(max(time.Until(end), time.Nanosecond))
	}
	return r
}

func rows(invs []inflight.Invocation) []*mailboxv1.Invocation {
	out := make([]*mailboxv1.Invocation, len(invs))
	for i := range invs {
		out[i] = row(&invs[i])
	}
	return out
}
