package mailbox

import (
	"context"
	"time"

	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/audit"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/names"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
)

// auditDrain bounds how long a draining mailbox waits for its last audit
// events to reach the trail.
const auditDrain = 2 * time.Second

// outcomes name how an invocation ended in the audit trail.
var outcomes = map[inflight.Answer]string{inflight.ByCancel: "cancelled", inflight.ByTimeout: "timed_out", inflight.ByCap: "in_doubt"}

// audited records an answered invocation. The store calls it under its
// lock: Record only queues.
func (s *Service) audited(e inflight.Ended) {
	outcome, ok := outcomes[e.By]
	if !ok {
		outcome = "ok"
		if e.Capture.ExitCode != 0 {
			outcome = "failed"
		}
	}
	inv := &registryv1.AuditInvocation{Id: e.ID, Client: e.Client, Tool: e.Tool, PresentedName: names.Presented(e.Client, e.Tool),
		Front: e.Front, Outcome: outcome, BytesIn: int64(e.InputBytes), BytesOut: int64(e.Capture.Size()), Deliveries: e.Handoffs}
	if !e.Posted.IsZero() {
		inv.Posted = timestamppb.New(e.Posted)
	}
	if e.By != inflight.ByCancel {
		exit := e.Capture.ExitCode
		inv.ExitCode = &exit
	}
	ws := s.view.WorkspaceOf(e.Client)
	if s.view.RecordsIO(ws) {
		c := e.Capture // as its poster got it: a cancel's or a timeout's is the mailbox's
		inv.Content = audit.Content(e.Input, e.Cwd, c.Stdout, c.Stderr, c.MCPResult)
	}
	s.audit.Record(&registryv1.AuditEvent{Actor: e.Poster, Workspace: ws, Action: "invocation",
		Target: inv.PresentedName, Invocation: inv})
}

// auditRefusal records a post the mailbox refused, with its sentence (and
// its input, where the workspace records inputs).
func (s *Service) auditRefusal(ctx context.Context, client, tool, input string, cwd *string, err error) {
	caller, cerr := identity.Caller(ctx)
	if cerr != nil || err == nil {
		return // unauthenticated: nobody to name
	}
	inv := &registryv1.AuditInvocation{Client: client, Tool: tool, PresentedName: names.Presented(client, tool), Front: audit.FrontOf(ctx), Outcome: "refused"}
	ws := s.view.WorkspaceOf(client)
	if s.view.RecordsIO(ws) {
		inv.Content = audit.Content(input, cwd, "", "", "")
	}
	s.audit.Record(&registryv1.AuditEvent{Actor: caller.Name, Workspace: ws, Action: "invocation",
		Target: inv.PresentedName, Detail: status.Convert(err).Message(), Invocation: inv})
}
