package mailbox

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/watch"
)

// Watch streams the invocations the caller may see: a snapshot, synced,
// then each change. An admin sees every invocation; a driver what it
// posted. A watcher that falls behind is ended, never waited for.
func (s *Service) Watch(_ *mailboxv1.WatchRequest, stream grpc.ServerStreamingServer[mailboxv1.WatchResponse]) error {
	ctx := stream.Context()
	caller, err := identity.Caller(ctx)
	if err != nil {
		return err
	}
	w, snapshot := s.watch.Watch(caller.Grade == identity.Admin, caller.Name)
	defer s.watch.Unwatch(w)
	for _, st := range snapshot {
		if err := stream.Send(&mailboxv1.WatchResponse{Event: &mailboxv1.WatchResponse_Invocation{Invocation: st}}); err != nil {
			return err
		}
	}
	if err := stream.Send(&mailboxv1.WatchResponse{Event: &mailboxv1.WatchResponse_Synced{Synced: &mailboxv1.WatchSynced{}}}); err != nil {
		return err
	}
	for {
		select {
		case st := <-w.C():
			if err := stream.Send(&mailboxv1.WatchResponse{Event: &mailboxv1.WatchResponse_Invocation{Invocation: st}}); err != nil {
				return err
			}
		case <-w.Ended():
			if ctx.Err() != nil {
				return status.FromContextError(ctx.Err()).Err()
			}
			return status.Errorf(codes.ResourceExhausted,
				"watch: this watcher fell %d changes behind and was ended so that it holds nobody up; watch again for a fresh snapshot", watch.MaxBuffer)
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		}
	}
}

// posted tells the watchers of a new invocation.
func (s *Service) posted(p inflight.Post) {
	now := timestamppb.Now()
	s.watch.Publish(&mailboxv1.InvocationState{Invocation: p.ID, Client: p.Client, Tool: p.Tool, Poster: p.Poster,
		Phase: mailboxv1.Phase_PHASE_QUEUED, Posted: now, Changed: now})
}

// handed tells the watchers of invocations handed to the reading host.
func (s *Service) handed(ctx context.Context, invs []inflight.Invocation) {
	if len(invs) == 0 {
		return
	}
	caller, _ := identity.Caller(ctx)
	now := timestamppb.New(time.Now())
	for i := range invs {
		s.watch.Publish(&mailboxv1.InvocationState{Invocation: invs[i].ID, Client: caller.Name, Tool: invs[i].Tool,
			Phase: mailboxv1.Phase_PHASE_HANDED_OUT, HandOffs: invs[i].Delivery, Changed: now})
	}
}

// changed tells the watchers an invocation reached phase; known fills in
// what the caller knows of it.
func (s *Service) changed(id string, phase mailboxv1.Phase, known *mailboxv1.InvocationState) {
	known.Invocation, known.Phase = id, phase
	s.watch.Publish(known)
}

// asking tells the watchers how many questions wait on an invocation; the
// phase is left as the watchers know it.
func (s *Service) asking(id, client string, waiting int) {
	s.watch.Publish(&mailboxv1.InvocationState{Invocation: id, Client: client, Questions: proto.Int32(int32(waiting))})
}

// answeredItself tells the watchers of an answer the mailbox wrote itself
// (at the hand-off cap, at a driver's timeout). The store calls under its
// lock, so the change is published from a goroutine of its own.
func (s *Service) answeredItself(id, client string, exit int32) {
	go s.changed(id, mailboxv1.Phase_PHASE_ANSWERED, &mailboxv1.InvocationState{Client: client, ExitCode: &exit})
}
