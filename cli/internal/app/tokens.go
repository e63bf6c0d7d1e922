package app

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/switchboard-run/switchboard/cli/internal/remote"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/envflag"
)

// runTokens: switchboard tokens create --identity N --grade G [--note T] | ls | revoke ID
func runTokens(ctx context.Context, args []string, std IO) int {
	if len(args) == 0 {
		return fail(std, "tokens", usagef("usage: switchboard tokens create|ls|revoke"))
	}
	sub, args := args[0], args[1:]
	fs := envflag.NewFlagSet("tokens "+sub, std.Stderr)
	var rf remote.Flags
	rf.Register(fs)
	var name, grade, note *string
	if sub == "create" {
		name = fs.String("identity", "", "the identity the token acts as")
		grade = fs.String("grade", "operator", "operator or host")
		note = fs.String("note", "", "what the token is for")
	}
	pos, err := parse(fs, args)
	if err != nil {
		return fail(std, "tokens "+sub, err)
	}
	conn, err := rf.Dial()
	if err != nil {
		return fail(std, "tokens "+sub, err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	reg := registryv1.NewRegistryServiceClient(conn.Registry())
	ctx = conn.Ctx(ctx)
	switch sub {
	case "create":
		res, err := reg.CreateToken(ctx, &registryv1.CreateTokenRequest{Identity: *name, Grade: *grade, Note: *note})
		if err != nil {
			return fail(std, "tokens create", rpcError(err))
		}
		fmt.Fprintf(std.Stderr, "token %s for %q (%s); the secret below is shown once:\n", res.GetToken().GetId(), res.GetToken().GetIdentity(), res.GetToken().GetGrade())
		fmt.Fprintln(std.Stdout, res.GetSecret())
	case "ls":
		res, err := reg.ListTokens(ctx, &registryv1.ListTokensRequest{})
		if err != nil {
			return fail(std, "tokens ls", rpcError(err))
		}
		w := tabwriter.NewWriter(std.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "ID\tIDENTITY\tGRADE\tCREATED\tNOTE")
		for _, t := range res.GetTokens() {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", t.GetId(), t.GetIdentity(), t.GetGrade(), t.GetCreated().AsTime().Local().Format(time.DateTime), t.GetNote())
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
