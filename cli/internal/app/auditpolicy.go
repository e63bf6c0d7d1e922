package app

import (
	"context"
	"fmt"
	"time"

	"github.com/switchboard-run/switchboard/cli/internal/remote"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/envflag"
)

const auditPolicyUsage = "usage: switchboard audit policy <workspace> [io|metadata]"

// auditLevels are the words for a workspace's audit policy: io records
// inputs and outputs too; metadata (the default) only who, what and how.
var auditLevels = map[string]bool{"io": true, "metadata": false}

// runAuditPolicy: switchboard audit policy <workspace> [io|metadata] reads
// or sets what the trail records of a workspace's invocations.
func runAuditPolicy(ctx context.Context, args []string, std IO) int {
	fs := envflag.NewFlagSet("audit policy", std.Stderr)
	var rf remote.Flags
	rf.Register(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return fail(std, "audit policy", err)
	}
	if len(pos) < 1 || len(pos) > 2 {
		return fail(std, "audit policy", usagef("%s", auditPolicyUsage))
	}
	var set *registryv1.AuditPolicy
	if len(pos) == 2 {
		record, ok := auditLevels[pos[1]]
		if !ok {
			return fail(std, "audit policy", usagef("audit policy %q is neither io (record inputs and outputs) nor metadata", pos[1]))
		}
		set = &registryv1.AuditPolicy{RecordIo: record}
	}
	conn, ctx, done, err := rf.Open(ctx, 30*time.Second)
	if err != nil {
		return fail(std, "audit policy", err)
	}
	defer done()
	trail := registryv1.NewAuditServiceClient(conn.Registry())
	ws := pos[0]
	if set == nil {
		res, err := trail.GetAuditPolicy(ctx, &registryv1.GetAuditPolicyRequest{Workspace: ws})
		if err != nil {
			return fail(std, "audit policy", rpcError(err))
		}
		fmt.Fprintln(std.Stdout, auditLevel(res.GetPolicy()))
		return 0
	}
	res, err := trail.SetAuditPolicy(ctx, &registryv1.SetAuditPolicyRequest{Workspace: ws, Policy: set})
	if err != nil {
		return fail(std, "audit policy", rpcError(err))
	}
	fmt.Fprintf(std.Stdout, "workspace %s: audit policy %s\n", ws, auditLevel(res.GetPolicy()))
	return 0
}

// auditLevel is a policy's word.
func auditLevel(p *registryv1.AuditPolicy) string {
	if p.GetRecordIo() {
		return "io"
	}
	return "metadata"
}
