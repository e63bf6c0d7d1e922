package records

import (
	"context"

	"google.golang.org/protobuf/proto"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
)

// Audit policies (docs/security.md, "Audit"):
//
//	auditpolicy.<workspace>  what the trail records of its invocations
const auditPolicyPrefix = "auditpolicy."

// AuditPolicy is one workspace's audit policy as the watch reports it.
type AuditPolicy struct {
	Workspace string
	// Policy is the stored policy; nil on a deletion.
	Policy *registryv1.AuditPolicy
}

// PutAuditPolicy stores a workspace's audit policy.
func (r *Records) PutAuditPolicy(ctx context.Context, workspace string, p *registryv1.AuditPolicy) (uint64, error) {
	rec, err := proto.MarshalOptions{Deterministic: true}.Marshal(p)
	if err != nil {
		return 0, err
	}
	return r.set(ctx, auditPolicyPrefix+workspace, rec)
}

// decodeAuditPolicy reads one audit policy key and value.
func decodeAuditPolicy(c *Change, ws string, value []byte) error {
	c.AuditPolicy = &AuditPolicy{Workspace: ws}
	if c.Deleted {
		return nil
	}
	c.AuditPolicy.Policy = new(registryv1.AuditPolicy)
	return proto.Unmarshal(value, c.AuditPolicy.Policy)
}
