package mailbox

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/contract"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/idempotency"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
)

// keyWrite bounds a key's writes made after the caller may have gone:
// releasing a refused claim, keeping a capture.
const keyWrite = 5 * time.Second

// whole is ctx without its cancellation, to its deadline (keyWrite from now
// when it has none): a key's claim and its post are made whole though the
// caller goes between them, for a claim without its post would answer
// every retry with the key "not in flight".
func whole(ctx context.Context) (context.Context, context.CancelFunc) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(keyWrite)
	}
	return context.WithDeadline(context.WithoutCancel(ctx), deadline)
}

// idempotencyKey is the caller's idempotency key, checked; "" when it
// sent none. ValueFromIncomingContext reads the one key without copying
// the metadata, which every Call and Invoke would otherwise pay for.
func idempotencyKey(ctx context.Context) (string, error) {
	switch v := metadata.ValueFromIncomingContext(ctx, contract.IdempotencyKey); len(v) {
	case 0:
		return "", nil
	case 1:
		return v[0], contract.CheckIdempotencyKey(v[0])
	default:
		return "", status.Errorf(codes.InvalidArgument, "idempotency key: %d keys sent; send one", len(v))
	}
}

// keyed is one use of an idempotency key: its claim, and the call it
// stands for.
type keyed struct {
	claim idempotency.Claim
	sum   []byte
}

// claimKey claims key for p, or finds what it names already.
func (s *Service) claimKey(ctx context.Context, key string, p inflight.Post) (keyed, error) {
	sum := idempotency.Sum(p.Client, p.Tool, p.Input, p.Cwd, p.MCPParams)
	cl, err := s.keys.Claim(ctx, p.Poster, key, sum, p.ID)
	return keyed{claim: cl, sum: sum}, err
}

// release frees a claim whose post was refused before anything was
// posted, so the key may be used again.
func (s *Service) release(ctx context.Context, k keyed) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), keyWrite)
	defer cancel()
	s.keys.Release(ctx, k.claim)
}

// keep stores on the key the capture its call collected.
func (s *Service) keep(ctx context.Context, k keyed, c *mailboxv1.Capture) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), keyWrite)
	defer cancel()
	if err := s.keys.Answer(ctx, k.claim, k.sum, c); err != nil {
		s.log.Warn("keeping the capture on its idempotency key; a retry will collect by the handle", "invocation", k.claim.Invocation, "err", err)
	}
}

// kept waits a moment for the capture another use of the key took to be
// kept on it: two uses of a key wait on one invocation, one takes it.
func (s *Service) kept(ctx context.Context, k keyed) *mailboxv1.Capture {
	ctx, cancel := context.WithTimeout(ctx, keyWrite)
	defer cancel()
	return s.keys.Kept(ctx, k.claim)
}

// callAgain answers a Call whose key named an invocation already: with the
// capture the key keeps, or by collecting it until wait ends.
func (s *Service) callAgain(ctx, wait context.Context, poster string, k keyed) (*mailboxv1.CallResponse, error) {
	id := k.claim.Invocation
	_ = grpc.SendHeader(ctx, metadata.Pairs(contract.InvocationHeader, id))
	if k.claim.Capture != nil {
		return &mailboxv1.CallResponse{Invocation: id, Capture: k.claim.Capture}, nil
	}
	hold := maxCaptureWait
	if deadline, ok := wait.Deadline(); ok {
		hold = min(hold, time.Until(deadline))
	}
	c, err := s.box.Collect(ctx, poster, id, max(hold, 0), k.claim.RetryKey())
	s.held.settled(id, poster, c != nil, err)
	if status.Code(err) == codes.NotFound { // taken by the key's first call, which keeps it
		if kept := s.kept(ctx, k); kept != nil {
			return &mailboxv1.CallResponse{Invocation: id, Capture: kept}, nil
		}
	}
	if err != nil {
		_ = grpc.SetTrailer(ctx, metadata.Pairs(contract.RefusedTrailer, "1"))
		return nil, err
	}
	if c == nil {
		return &mailboxv1.CallResponse{Invocation: id}, nil // still running: the handle alone, as at a Call's deadline
	}
	s.changed(id, mailboxv1.Phase_PHASE_COLLECTED, &mailboxv1.InvocationState{Poster: poster, ExitCode: &c.ExitCode})
	res := &mailboxv1.CallResponse{Invocation: id, Capture: toProto(c)}
	s.keep(ctx, k, res.Capture)
	return res, nil
}
