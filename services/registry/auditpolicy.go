package registry

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/names"
	"github.com/switchboard-run/switchboard/services/registry/internal/watch"
)

// Audit policies say what the trail records of a workspace's invocations
// (docs/security.md, "Audit"); the mailbox reads them through WatchTools.

// SetAuditPolicy stores a workspace's audit policy.
func (a auditService) SetAuditPolicy(ctx context.Context, req *registryv1.SetAuditPolicyRequest) (*registryv1.SetAuditPolicyResponse, error) {
	ws := req.GetWorkspace()
	if err := names.CheckWorkspace(ws); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "set audit policy: %v", err)
	}
	if req.GetPolicy() == nil {
		return nil, status.Error(codes.InvalidArgument, `set audit policy: missing field "policy", e.g. {"record_io": true}`)
	}
	st := a.s.st
	rev, err := st.records.PutAuditPolicy(ctx, ws, req.GetPolicy())
	if err != nil {
		return nil, storeFailed("set the audit policy of workspace "+ws, err)
	}
	if err := st.waitApplied(ctx, rev); err != nil {
		return nil, err
	}
	st.act(ctx, "audit.policy", ws, ws, auditPolicyName(req.GetPolicy()))
	return &registryv1.SetAuditPolicyResponse{Policy: req.GetPolicy()}, nil
}

// GetAuditPolicy reads a workspace's audit policy.
func (a auditService) GetAuditPolicy(ctx context.Context, req *registryv1.GetAuditPolicyRequest) (*registryv1.GetAuditPolicyResponse, error) {
	ws := req.GetWorkspace()
	st := a.s.st
	_, sees, err := st.caller(ctx)
	if err != nil {
		return nil, err
	}
	if names.CheckWorkspace(ws) != nil || !sees.Sees(ws) {
		return nil, unknownWorkspace(ws)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return &registryv1.GetAuditPolicyResponse{Policy: auditPolicyOf(st.audits[ws])}, nil
}

// auditPolicyName says a policy in the words the trail's detail uses.
func auditPolicyName(p *registryv1.AuditPolicy) string {
	if p.GetRecordIo() {
		return "records inputs and outputs"
	}
	return "records no inputs or outputs"
}

// auditPolicyOf is p, or the default (nothing recorded beyond metadata).
func auditPolicyOf(p *registryv1.AuditPolicy) *registryv1.AuditPolicy {
	if p == nil {
		return &registryv1.AuditPolicy{}
	}
	return proto.CloneOf(p)
}

// setAuditPolicy puts a workspace's audit policy in force. Call with s.mu
// held.
func (s *state) setAuditPolicy(ws string, p *registryv1.AuditPolicy) {
	if p == nil {
		delete(s.audits, ws)
		return
	}
	s.audits[ws] = p
}

// publishAuditPolicy announces ws's audit policy in force.
func (s *state) publishAuditPolicy(ws string) {
	s.hub.Publish(auditPolicyEvent(s.applied, ws, auditPolicyOf(s.audits[ws])), toWorkspace(ws))
}

func auditPolicyEvent(rev uint64, ws string, p *registryv1.AuditPolicy) *watch.Event {
	return &watch.Event{Revision: rev, Change: &registryv1.WatchToolsResponse_AuditPolicy{
		AuditPolicy: &registryv1.WorkspaceAuditPolicy{Workspace: ws, Policy: p}}}
}

// auditPolicyEvents are a snapshot's policies: workspace's alone, or every
// workspace sees holds; only those that record more than the default.
func (s *state) auditPolicyEvents(rev uint64, workspace string, sees identity.Workspaces) []*watch.Event {
	var out []*watch.Event
	for _, ws := range sortedKeys(s.audits) {
		if (ws == workspace || workspace == "" && sees.Sees(ws)) && s.audits[ws].GetRecordIo() {
			out = append(out, auditPolicyEvent(rev, ws, s.audits[ws]))
		}
	}
	return out
}
