package mailbox

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/names"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
)

// gauged counts a read in the open reads' gauge until it closes.
type gauged struct {
	inflight.Read
	gauge prometheus.Gauge
	once  sync.Once
}

func (r *gauged) Close() {
	r.once.Do(func() {
		r.Read.Close()
		r.gauge.Dec()
	})
}

// backlogPause ends a unary read's batch when the backlog it waits for
// stops arriving (see Invocations): deliveries of a backlog follow each
// other within milliseconds.
const backlogPause = 200 * time.Millisecond

// room is one read batch's bound: a response never nears the gRPC message
// limit (Bounds.check keeps MaxReadBytes under half of it).
func (s *Service) room() *inflight.Room {
	return &inflight.Room{Rows: s.bounds.MaxReadRows, Bytes: s.bounds.MaxReadBytes}
}

// Invocations is the unary read: it holds until something is queued and
// answers a batch of it, or the hold ends and answers none. A batch is
// what waited when the read opened, as much as fits the read's bounds;
// the rest waits for the next read, not handed out.
func (s *Service) Invocations(ctx context.Context, req *mailboxv1.InvocationsRequest) (*mailboxv1.InvocationsResponse, error) {
	hold := maxReadHold
	if req.Wait != nil {
		var err error
		if hold, err = duration("invocations", req.Wait.AsDuration(), req.Wait.CheckValid(), maxReadHold); err != nil {
			return nil, err
		}
	}
	read, err := s.openRead(ctx, req.GetSession())
	if err != nil {
		return nil, err
	}
	defer read.Close()
	timer := time.NewTimer(hold)
	defer timer.Stop()
	// A store may deliver the backlog in pieces, and drop at Take what
	// was answered meanwhile: the read keeps taking while the backlog lasts
	// and the batch has room, so a batch is not needlessly short.
	room := s.room()
	var taken []inflight.Invocation
	for {
		invs, _ := read.Take(false, room)
		taken = append(taken, invs...)
		if room.Full || (len(taken) > 0 && !read.Backlogged()) {
			return s.handOut(ctx, taken), nil
		}
		// With rows in hand, the rest of the backlog is awaited only while
		// it keeps arriving: a store counts it when the read opens, and the
		// count may hold acknowledgements still in flight, or hand-offs of
		// a replica that died (back only when their lease runs out).
		var quiet <-chan time.Time
		if len(taken) > 0 {
			quiet = time.After(backlogPause) // collected unfired since Go 1.23
		}
		select {
		case <-read.Wake():
		case <-quiet:
			return s.handOut(ctx, taken), nil
		case <-timer.C:
			return s.handOut(ctx, taken), nil
		case <-read.Ended():
			return s.handOut(ctx, taken), nil
		case <-ctx.Done():
			// Nothing reaches the host: what was taken is given back uncounted.
			read.Unsent(taken)
			return nil, status.FromContextError(ctx.Err()).Err()
		}
	}
}

// handOut answers a read with what it took, telling the watchers.
func (s *Service) handOut(ctx context.Context, taken []inflight.Invocation) *mailboxv1.InvocationsResponse {
	s.handed(ctx, taken)
	return &mailboxv1.InvocationsResponse{Rows: rows(taken)}
}

// Follow is the streaming read: `opened` first, then invocations and
// cancellations as they happen, pushed the moment they are posted, a
// bounded batch at a time. An invocation counts as handed to the host
// only once its send succeeded.
func (s *Service) Follow(req *mailboxv1.FollowRequest, stream mailboxv1.MailboxService_FollowServer) error {
	ctx := stream.Context()
	read, err := s.openStreamRead(ctx, req.GetSession())
	if err != nil {
		return err
	}
	defer read.Close()
	return s.push(ctx, read, stream.Send)
}

// push sends a read's events until it or ctx ends: Follow's and Serve's
// loop.
func (s *Service) push(ctx context.Context, read inflight.Read, send func(*mailboxv1.FollowResponse) error) error {
	opened := &mailboxv1.FollowResponse{Event: &mailboxv1.FollowResponse_Opened{Opened: &mailboxv1.Opened{Requeued: int32(read.Requeued())}}}
	if err := send(opened); err != nil {
		return err
	}
	for {
		room := s.room()
		invs, cancels := read.Take(true, room)
		for i := range invs {
			ev := &mailboxv1.FollowResponse{Event: &mailboxv1.FollowResponse_Invocation{Invocation: row(&invs[i])}}
			// The watchers hear of the hand-off before the host can answer
			// it: told after the send, a quick host's answer could reach them
			// first. A send that fails leaves it shown handed out, as one
			// whose host's read ended is.
			s.handed(ctx, invs[i:i+1])
			if err := send(ev); err != nil {
				read.Unsent(invs[i:]) // never reached the host: no hand-off
				return err
			}
		}
		for _, id := range cancels {
			ev := &mailboxv1.FollowResponse{Event: &mailboxv1.FollowResponse_Cancelled{Cancelled: &mailboxv1.Cancelled{Invocation: id}}}
			if err := send(ev); err != nil {
				return err
			}
		}
		for _, a := range read.Answers() {
			if err := send(&mailboxv1.FollowResponse{Event: &mailboxv1.FollowResponse_Answered{Answered: a}}); err != nil {
				return err
			}
		}
		if room.Full {
			continue // more waits than the batch held
		}
		select {
		case <-read.Wake():
		case <-read.Ended():
			return status.Error(codes.Unavailable, read.Why())
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		}
	}
}

// openStreamRead is openRead on a goroutine of its own, for a stream's
// handler: that goroutine lives as long as the host stays connected, and
// its stack keeps the size of its deepest call, which opening doubles
// (16 KiB a parked host instead of 8; docs/scale.md).
func (s *Service) openStreamRead(ctx context.Context, session string) (inflight.Read, error) {
	type opened struct {
		read inflight.Read
		err  error
	}
	done := make(chan opened, 1)
	go func() {
		read, err := s.openRead(ctx, session)
		done <- opened{read, err}
	}()
	o := <-done
	return o.read, o.err
}

// openRead claims the caller's queue: the read lease first (one reader
// per client across every replica, and the client's presence), then the
// store's read.
func (s *Service) openRead(ctx context.Context, session string) (inflight.Read, error) {
	caller, err := identity.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := names.CheckClient(caller.Name); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "identity %q cannot hold a queue: %v", caller.Name, err)
	}
	if session != "" && !sessionRE.MatchString(session) {
		return nil, status.Errorf(codes.InvalidArgument, "session %q is not 1–64 chars of [A-Za-z0-9._-]", session)
	}
	read, err := s.box.OpenRead(ctx, caller.Name, session)
	if err != nil {
		return nil, err
	}
	s.reads.Inc()
	return &gauged{Read: read, gauge: s.reads}, nil
}
