package mailbox

import (
	"context"
	"math"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
)

// Report keeps a progress note from the host an invocation was addressed
// to.
func (s *Service) Report(ctx context.Context, req *mailboxv1.ReportRequest) (*mailboxv1.ReportResponse, error) {
	caller, err := identity.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if p := req.GetProgress(); math.IsNaN(p) || math.IsInf(p, 0) {
		return nil, status.Errorf(codes.InvalidArgument, "report: progress %v is not a finite number", p)
	}
	if req.Total != nil {
		if t := req.GetTotal(); math.IsNaN(t) || math.IsInf(t, 0) {
			return nil, status.Errorf(codes.InvalidArgument, "report: total %v is not a finite number", t)
		}
	}
	n := inflight.NewNote(req.GetProgress(), req.Total, req.GetMessage(), time.Now())
	if req.Log != nil {
		if n.Log, err = inflight.CheckLog(req); err != nil {
			return nil, err
		}
	}
	if req.Question != nil {
		if n.Question, err = inflight.CheckQuestion(req); err != nil {
			return nil, err
		}
	}
	seq, held, err := s.box.Report(ctx, caller.Name, req.GetInvocation(), n)
	if err != nil {
		return nil, err
	}
	s.held.noted(req.GetInvocation(), held)
	s.metrics.notes.WithLabelValues(s.workspaceLabel(caller.Name)).Inc()
	return &mailboxv1.ReportResponse{Seq: seq}, nil
}

// Status reads an invocation for its poster without taking it, waiting
// for news when asked.
func (s *Service) Status(ctx context.Context, req *mailboxv1.StatusRequest) (*mailboxv1.StatusResponse, error) {
	caller, err := identity.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if req.GetAfter() < 0 {
		return nil, status.Errorf(codes.InvalidArgument, "status: after %d is negative; send 0 for every note kept", req.GetAfter())
	}
	var wait time.Duration
	if req.Wait != nil {
		if wait, err = duration("status", req.Wait.AsDuration(), req.Wait.CheckValid(), inflight.MaxStatusWait); err != nil {
			return nil, err
		}
	}
	st, err := s.box.Status(ctx, caller.Name, req.GetInvocation(), req.GetAfter(), wait)
	if err != nil {
		return nil, err
	}
	return &mailboxv1.StatusResponse{Invocation: req.GetInvocation(), Phase: phaseOf(st.Phase), HandOffs: st.Handoffs,
		Progress: inflight.NotesProto(st.Notes), Capture: toProto(st.Capture), ExpiresIn: durationpb.New(max(time.Until(st.Expires), 0)),
		Client: st.Client, Tool: st.Tool, Posted: posted(st.Posted)}, nil
}

// posted is a post time for the wire: absent when the store did not keep it.
func posted(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

func phaseOf(p inflight.Phase) mailboxv1.Phase {
	switch p {
	case inflight.Queued:
		return mailboxv1.Phase_PHASE_QUEUED
	case inflight.HandedOut:
		return mailboxv1.Phase_PHASE_HANDED_OUT
	case inflight.AnsweredPhase:
		return mailboxv1.Phase_PHASE_ANSWERED
	case inflight.CancelledPhase:
		return mailboxv1.Phase_PHASE_CANCELLED
	}
	return mailboxv1.Phase_PHASE_UNSPECIFIED
}

// Answer gives the host running an invocation its poster's answer to a
// question the host asked (a question note, read with Status).
func (s *Service) Answer(ctx context.Context, req *mailboxv1.AnswerRequest) (*mailboxv1.AnswerResponse, error) {
	caller, err := identity.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if !inflight.IsID(req.GetInvocation()) {
		return nil, inflight.Absent(req.GetInvocation())
	}
	a, err := inflight.CheckAnswer(req)
	if err != nil {
		return nil, err
	}
	if err := s.box.Answer(ctx, caller.Name, a); err != nil {
		return nil, err
	}
	return &mailboxv1.AnswerResponse{}, nil
}
