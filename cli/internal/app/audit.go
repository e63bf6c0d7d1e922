package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/switchboard-run/switchboard/cli/internal/remote"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/envflag"
)

// runAudit: switchboard audit [filters] [--since T] [--until T] [--follow] [--json]
// (or audit policy, auditpolicy.go) reads the audit trail (docs/security.md, "Audit"); --json writes JSON
// lines, the export for a SIEM.
func runAudit(ctx context.Context, args []string, std IO) int {
	if len(args) > 0 && args[0] == "policy" {
		return runAuditPolicy(ctx, args[1:], std)
	}
	fs := envflag.NewFlagSet("audit", std.Stderr)
	var rf remote.Flags
	rf.Register(fs)
	req := &registryv1.ListAuditRequest{}
	fs.StringVar(&req.Actor, "actor", "", "only events of this identity")
	fs.StringVar(&req.Workspace, "workspace", "", "only events of this workspace")
	fs.StringVar(&req.Client, "client", "", "only invocations of this client, and acts on it")
	fs.StringVar(&req.Tool, "tool", "", "only invocations of this tool (presented or advertised name)")
	fs.StringVar(&req.Action, "action", "", "only this action: invocation, mount, token.create, pin.approve, …")
	fs.StringVar(&req.Outcome, "outcome", "", "only invocations that ended so: ok, failed, cancelled, timed_out, in_doubt, refused")
	since := fs.String("since", "24h", "from this time on: an RFC 3339 time, or a duration back from now")
	until := fs.String("until", "", "before this time: an RFC 3339 time, or a duration back from now")
	follow := fs.Bool("follow", false, "after the events so far, print each new one as it is recorded, until interrupted")
	asJSON := fs.Bool("json", false, "one JSON object per line (the export for a SIEM) instead of a table")
	if _, err := parse(fs, args); err != nil {
		return fail(std, "audit", err)
	}
	if *follow && *until != "" {
		return fail(std, "audit", usagef("--follow and --until do not go together: a follow has no end"))
	}
	for _, t := range []struct {
		flag, value string
		into        **timestamppb.Timestamp
	}{{"since", *since, &req.Since}, {"until", *until, &req.Until}} {
		if t.value == "" {
			continue
		}
		at, err := parseWhen(t.value)
		if err != nil {
			return fail(std, "audit", usagef("--%s %q: %v", t.flag, t.value, err))
		}
		*t.into = timestamppb.New(at)
	}
	timeout := 60 * time.Second
	if *follow {
		timeout = 100 * 365 * 24 * time.Hour // until interrupted
	}
	conn, ctx, done, err := rf.Open(ctx, timeout)
	if err != nil {
		return fail(std, "audit", err)
	}
	defer done()
	trail := registryv1.NewAuditServiceClient(conn.Registry())
	out := newAuditOut(std.Stdout, *asJSON)
	defer out.flush()
	if *follow {
		stream, err := trail.FollowAudit(ctx, &registryv1.FollowAuditRequest{Actor: req.Actor, Workspace: req.Workspace, Client: req.Client,
			Tool: req.Tool, Action: req.Action, Outcome: req.Outcome, Since: req.Since})
		if err != nil {
			return fail(std, "audit", rpcError(err))
		}
		for {
			res, err := stream.Recv()
			if err != nil {
				if ctx.Err() != nil || err == io.EOF {
					return 0
				}
				return fail(std, "audit", rpcError(err))
			}
			out.write(res.GetEvent())
			out.flush()
		}
	}
	for {
		res, err := trail.ListAudit(ctx, req)
		if err != nil {
			return fail(std, "audit", rpcError(err))
		}
		for _, e := range res.GetEvents() {
			out.write(e)
		}
		if res.GetNextPageToken() == "" {
			return 0
		}
		req.PageToken = res.GetNextPageToken()
	}
}

// parseWhen reads an RFC 3339 time, or a duration back from now.
func parseWhen(s string) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return time.Now().Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("neither an RFC 3339 time nor a duration such as 1h")
	}
	return t, nil
}

// auditOut prints events as a table or as JSON lines.
type auditOut struct {
	json  bool
	w     io.Writer
	table *tabwriter.Writer
	head  bool
}

func newAuditOut(w io.Writer, asJSON bool) *auditOut {
	return &auditOut{json: asJSON, w: w, table: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
}

func (o *auditOut) write(e *registryv1.AuditEvent) {
	if o.json {
		b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(e)
		var line bytes.Buffer
		if err == nil && json.Compact(&line, b) == nil {
			fmt.Fprintln(o.w, line.String())
		}
		return
	}
	if !o.head {
		fmt.Fprintln(o.table, "TIME\tACTOR\tWORKSPACE\tACTION\tTARGET\tOUTCOME\tEXIT\tFRONT\tDETAIL")
		o.head = true
	}
	inv := e.GetInvocation()
	exit := "-"
	if inv != nil && inv.ExitCode != nil {
		exit = strconv.Itoa(int(inv.GetExitCode()))
	}
	fmt.Fprintf(o.table, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.GetAt().AsTime().Local().Format(time.DateTime), e.GetActor(),
		orDash(e.GetWorkspace()), e.GetAction(), orDash(e.GetTarget()), orDash(inv.GetOutcome()), exit, orDash(inv.GetFront()),
		strings.ReplaceAll(e.GetDetail(), "\n", " "))
}

func (o *auditOut) flush() { o.table.Flush() }
