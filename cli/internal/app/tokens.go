package app

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/switchboard-run/switchboard/cli/internal/remote"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/envflag"
)

// runTokens: switchboard tokens create --identity N [--grade G] [--workspaces a,b|*] [--ttl D] [--note T] | ls | revoke ID
func runTokens(ctx context.Context, args []string, std IO) int {
	if len(args) == 0 {
		return fail(std, "tokens", usagef("usage: switchboard tokens create|ls|revoke"))
	}
	sub, args := args[0], args[1:]
	fs := envflag.NewFlagSet("tokens "+sub, std.Stderr)
	var rf remote.Flags
	rf.Register(fs)
	var name, grade, note, workspaces, groups *string
	var ttl *time.Duration
	if sub == "create" {
		name = fs.String("identity", "", "the identity the token acts as")
		grade = fs.String("grade", "driver", "host, driver, admin or scrape (reads metrics only)")
		workspaces = fs.String("workspaces", "", "the workspaces the token may see, comma-separated, or '*' for every one (a driver or admin token needs some)")
		ttl = fs.Duration("ttl", 0, "how long the token works (0: the registry's default, 90 days)")
		note = fs.String("note", "", "what the token is for")
		groups = fs.String("groups", "", "limit a driver token to these tool groups, comma-separated (docs/security.md)")
	}
	pos, err := parse(fs, args)
	if err != nil {
		return fail(std, "tokens "+sub, err)
	}
	conn, ctx, done, err := rf.Open(ctx, 30*time.Second)
	if err != nil {
		return fail(std, "tokens "+sub, err)
	}
	defer done()
	reg := registryv1.NewRegistryServiceClient(conn.Registry())
	switch sub {
	case "create":
		req := &registryv1.CreateTokenRequest{Identity: *name, Grade: *grade, Note: *note, Workspaces: envflag.List(*workspaces), Groups: envflag.List(*groups)}
		if *ttl != 0 {
			req.Ttl = durationpb.New(*ttl)
		}
		res, err := reg.CreateToken(ctx, req)
		if err != nil {
			return fail(std, "tokens create", rpcError(err))
		}
		t := res.GetToken()
		limited := ""
		if len(t.GetGroups()) > 0 {
			limited = ", groups " + strings.Join(t.GetGroups(), ",")
		}
		fmt.Fprintf(std.Stderr, "token %s for %q (%s of %s%s, until %s); the secret below is shown once:\n",
			t.GetId(), t.GetIdentity(), t.GetGrade(), workspaceList(t.GetWorkspaces()), limited, t.GetExpires().AsTime().Local().Format(time.DateTime))
		fmt.Fprintln(std.Stdout, res.GetSecret())
	case "ls":
		res, err := reg.ListTokens(ctx, &registryv1.ListTokensRequest{})
		if err != nil {
			return fail(std, "tokens ls", rpcError(err))
		}
		w := tabwriter.NewWriter(std.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "ID\tIDENTITY\tGRADE\tWORKSPACES\tCREATED\tEXPIRES\tNOTE")
		for _, t := range res.GetTokens() {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.GetId(), t.GetIdentity(), t.GetGrade(), workspaceList(t.GetWorkspaces()),
				t.GetCreated().AsTime().Local().Format(time.DateTime), t.GetExpires().AsTime().Local().Format(time.DateTime), t.GetNote())
		}
		w.Flush()
	case "revoke":
		if len(pos) != 1 {
			return fail(std, "tokens revoke", usagef("usage: switchboard tokens revoke <id>"))
		}
		if _, err := reg.RevokeToken(ctx, &registryv1.RevokeTokenRequest{Id: pos[0]}); err != nil {
			return fail(std, "tokens revoke", rpcError(err))
		}
		fmt.Fprintf(std.Stdout, "revoked %s\n", pos[0])
	default:
		return fail(std, "tokens", usagef("unknown tokens command %q: want create, ls or revoke", sub))
	}
	return 0
}

// workspaceList shows a grant's workspaces: "dev,ops", "*", or "none".
func workspaceList(ws []string) string {
	if len(ws) == 0 {
		return "none"
	}
	return strings.Join(ws, ",")
}
