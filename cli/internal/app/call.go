package app

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/switchboard-run/switchboard/cli/internal/remote"
	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/lib/rawjson"
	"github.com/switchboard-run/switchboard/kit/suite/envflag"
	"github.com/switchboard-run/switchboard/kit/suite/mailboxcall"
)

// runCall: switchboard call <presented-name> ['<json>' | -] [--timeout D] [--cwd DIR]
// prints the capture's stdout and stderr and exits with its exit code.
func runCall(ctx context.Context, args []string, std IO) int {
	fs := envflag.NewFlagSet("call", std.Stderr)
	var rf remote.Flags
	rf.Register(fs)
	timeout := fs.Duration("timeout", 60*time.Second, "how long to wait for the capture")
	cwd := fs.String("cwd", "", "working directory for a tool advertised with subject_cwd")
	pos, err := parse(fs, args)
	if err != nil {
		return fail(std, "call", err)
	}
	if len(pos) < 1 || len(pos) > 2 {
		return fail(std, "call", usagef("usage: switchboard call <presented-name> ['<json input>' | -]"))
	}
	input := "{}"
	if len(pos) == 2 {
		input = pos[1]
	}
	if input == "-" {
		data, err := io.ReadAll(std.Stdin)
		if err != nil {
			return fail(std, "call", err)
		}
		input = string(data)
	}
	if err := rawjson.Check("the input", input); err != nil {
		return fail(std, "call", usagef("%v: pass the tool's input as JSON, e.g. '{\"path\":\"/tmp\"}'", err))
	}
	conn, err := rf.Dial()
	if err != nil {
		return fail(std, "call", err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	res, err := registryv1.NewRegistryServiceClient(conn.Registry()).ResolveTool(conn.Ctx(ctx), &registryv1.ResolveToolRequest{PresentedName: pos[0]})
	if err != nil {
		return fail(std, "call", rpcError(err))
	}
	req := &mailboxv1.CallRequest{Client: res.GetClient(), Tool: res.GetTool().GetName(), Input: input}
	if *cwd != "" {
		req.Cwd = proto.String(*cwd)
	}
	// A reply lost with its mailbox replica, not the call: it is collected;
	// a call a replica refused unposted is made again.
	out, err := mailboxcall.Call(conn.Ctx(ctx), mailboxv1.NewMailboxServiceClient(mailboxcall.RetryingNotPosted(conn.Mailbox())), req, func(id string, lost error) {
		fmt.Fprintf(std.Stderr, "switchboard call: the connection to the mailbox broke while %s ran (%s); collecting its capture\n",
			id, status.Convert(lost).Message())
	})
	if err != nil {
		return fail(std, "call", rpcError(err))
	}
	if out.Capture == nil {
		fmt.Fprintf(std.Stderr, "switchboard call: %s is still running after %v; collect it later with: switchboard capture %s --wait 60s\n",
			out.GetInvocation(), *timeout, out.GetInvocation())
		return 124
	}
	return printCapture(std, out.GetCapture())
}

// runCapture: switchboard capture <invocation> [--wait D]
func runCapture(ctx context.Context, args []string, std IO) int {
	fs := envflag.NewFlagSet("capture", std.Stderr)
	var rf remote.Flags
	rf.Register(fs)
	wait := fs.Duration("wait", 0, "how long to wait for the capture (at most 60s)")
	pos, err := parse(fs, args)
	if err != nil {
		return fail(std, "capture", err)
	}
	if len(pos) != 1 {
		return fail(std, "capture", usagef("usage: switchboard capture <invocation> [--wait 60s]"))
	}
	conn, err := rf.Dial()
	if err != nil {
		return fail(std, "capture", err)
	}
	defer conn.Close()
	req := &mailboxv1.CaptureRequest{Invocation: pos[0]}
	if *wait > 0 {
		req.Wait = durationpb.New(*wait)
	}
	out, err := mailboxv1.NewMailboxServiceClient(conn.Mailbox()).Capture(conn.Ctx(ctx), req)
	if err != nil {
		return fail(std, "capture", rpcError(err))
	}
	if out.Capture == nil {
		fmt.Fprintf(std.Stderr, "switchboard capture: %s is still running\n", pos[0])
		return 124
	}
	return printCapture(std, out.GetCapture())
}

// printCapture writes stdout and stderr where they belong and returns the
// exit code a shell can see (codes outside 0–255 become 1).
func printCapture(std IO, c *mailboxv1.Capture) int {
	fmt.Fprint(std.Stdout, c.GetStdout())
	fmt.Fprint(std.Stderr, c.GetStderr())
	if s := c.GetStderr(); s != "" && !strings.HasSuffix(s, "\n") {
		fmt.Fprintln(std.Stderr)
	}
	code := int(c.GetExitCode())
	if code < 0 || code > 255 {
		return 1
	}
	return code
}
