package app

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/switchboard-run/switchboard/cli/internal/remote"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/envflag"
)

// runGrants: switchboard grants set NAME --workspaces a,b|* | ls | rm NAME
//
// A grant is the workspaces a certificate identity may see (a driver
// certificate sees nothing without one); tokens carry their own.
func runGrants(ctx context.Context, args []string, std IO) int {
	if len(args) == 0 {
		return fail(std, "grants", usagef("usage: switchboard grants set <identity> --workspaces a,b|'*' | ls | rm <identity>"))
	}
	sub, args := args[0], args[1:]
	fs := envflag.NewFlagSet("grants "+sub, std.Stderr)
	var rf remote.Flags
	rf.Register(fs)
	var workspaces *string
	if sub == "set" {
		workspaces = fs.String("workspaces", "", "the workspaces the identity may see, comma-separated, or '*' for every one")
	}
	pos, err := parse(fs, args)
	if err != nil {
		return fail(std, "grants "+sub, err)
	}
	want := map[string]int{"set": 1, "rm": 1, "ls": 0}
	n, known := want[sub]
	switch {
	case !known:
		return fail(std, "grants", usagef("unknown grants command %q: want set, ls or rm", sub))
	case len(pos) != n && n == 1:
		return fail(std, "grants "+sub, usagef("usage: switchboard grants %s <identity>", sub))
	case len(pos) != n:
		return fail(std, "grants "+sub, usagef("unexpected argument %q", pos[0]))
	}
	conn, ctx, done, err := rf.Open(ctx, 30*time.Second)
	if err != nil {
		return fail(std, "grants "+sub, err)
	}
	defer done()
	reg := registryv1.NewRegistryServiceClient(conn.Registry())
	switch sub {
	case "set":
		res, err := reg.SetGrant(ctx, &registryv1.SetGrantRequest{Identity: pos[0], Workspaces: envflag.List(*workspaces)})
		if err != nil {
			return fail(std, "grants set", rpcError(err))
		}
		fmt.Fprintf(std.Stdout, "%s may see %s\n", res.GetGrant().GetIdentity(), workspaceList(res.GetGrant().GetWorkspaces()))
	case "ls":
		res, err := reg.ListGrants(ctx, &registryv1.ListGrantsRequest{})
		if err != nil {
			return fail(std, "grants ls", rpcError(err))
		}
		w := tabwriter.NewWriter(std.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "IDENTITY\tWORKSPACES\tUPDATED")
		for _, g := range res.GetGrants() {
			fmt.Fprintf(w, "%s\t%s\t%s\n", g.GetIdentity(), workspaceList(g.GetWorkspaces()), g.GetUpdated().AsTime().Local().Format(time.DateTime))
		}
		w.Flush()
	case "rm":
		if _, err := reg.DeleteGrant(ctx, &registryv1.DeleteGrantRequest{Identity: pos[0]}); err != nil {
			return fail(std, "grants rm", rpcError(err))
		}
		fmt.Fprintf(std.Stdout, "removed the grant of %s\n", pos[0])
	}
	return 0
}
