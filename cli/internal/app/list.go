package app

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/switchboard-run/switchboard/cli/internal/remote"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/envflag"
	"github.com/switchboard-run/switchboard/kit/suite/registryview"
)

// runClients: switchboard clients [--workspace W] [--json]; every page of
// the workspace.
func runClients(ctx context.Context, args []string, std IO) int {
	return list(ctx, args, std, "clients", func(ctx context.Context, reg registryv1.RegistryServiceClient, ws string, asJSON bool) error {
		rows, err := registryview.Clients(ctx, reg, ws)
		if err != nil {
			return err
		}
		res := &registryv1.ListClientsResponse{Rows: rows}
		if asJSON {
			return printJSON(std, res)
		}
		w := tabwriter.NewWriter(std.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "CLIENT\tPRESENT\tTOOLS\tLAST SEEN")
		for _, r := range res.GetRows() {
			seen := "never"
			if r.LastSeen != nil {
				seen = r.GetLastSeen().AsTime().Local().Format(time.DateTime)
			}
			fmt.Fprintf(w, "%s\t%v\t%d\t%s\n", r.GetClient(), r.GetPresent(), len(r.GetTools()), seen)
		}
		return w.Flush()
	})
}

// runTools: switchboard tools [--workspace W] [--json]; every page of the
// workspace.
func runTools(ctx context.Context, args []string, std IO) int {
	return list(ctx, args, std, "tools", func(ctx context.Context, reg registryv1.RegistryServiceClient, ws string, asJSON bool) error {
		tools, err := registryview.Tools(ctx, reg, ws)
		if err != nil {
			return err
		}
		res := &registryv1.ListToolsResponse{Tools: tools}
		if asJSON {
			return printJSON(std, res)
		}
		w := tabwriter.NewWriter(std.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "PRESENTED NAME\tCLIENT\tPRESENT\tDESCRIPTION")
		for _, t := range res.GetTools() {
			fmt.Fprintf(w, "%s\t%s\t%v\t%s\n", t.GetPresentedName(), t.GetClient(), t.GetPresent(), oneLine(t.GetTool().GetDescription(), 60))
		}
		return w.Flush()
	})
}

func list(ctx context.Context, args []string, std IO, name string,
	show func(context.Context, registryv1.RegistryServiceClient, string, bool) error) int {
	fs := envflag.NewFlagSet(name, std.Stderr)
	var rf remote.Flags
	rf.Register(fs)
	ws := fs.String("workspace", "default", "the workspace to list")
	asJSON := fs.Bool("json", false, "print the reply as JSON")
	pos, err := parse(fs, args)
	if err != nil {
		return fail(std, name, err)
	}
	if len(pos) > 0 {
		return fail(std, name, usagef("unexpected argument %q", pos[0]))
	}
	conn, ctx, done, err := rf.Open(ctx, 30*time.Second)
	if err != nil {
		return fail(std, name, err)
	}
	defer done()
	if err := show(ctx, registryv1.NewRegistryServiceClient(conn.Registry()), *ws, *asJSON); err != nil {
		return fail(std, name, rpcError(err))
	}
	return 0
}

func printJSON(std IO, m proto.Message) error {
	b, err := protojson.MarshalOptions{UseProtoNames: true, Multiline: true, EmitDefaultValues: true}.Marshal(m)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(std.Stdout, string(b))
	return err
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// rpcError turns a gRPC status into the sentence it carries, saying what
// to do when the suite cannot be reached at all.
func rpcError(err error) error {
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	switch st.Code() {
	case codes.Unavailable:
		return fmt.Errorf("cannot reach the suite (%s); is it running? `make run` starts it", st.Message())
	case codes.DeadlineExceeded:
		return errors.New("no answer before the timeout")
	}
	return errors.New(st.Message())
}
