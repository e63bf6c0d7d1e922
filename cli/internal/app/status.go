package app

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/switchboard-run/switchboard/cli/internal/remote"
	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/envflag"
)

// runStatus: switchboard status <invocation> [--after N] [--wait D]
// prints where an invocation is and its host's latest progress notes,
// taking nothing: `switchboard capture` still collects the capture.
func runStatus(ctx context.Context, args []string, std IO) int {
	fs := envflag.NewFlagSet("status", std.Stderr)
	var rf remote.Flags
	rf.Register(fs)
	after := fs.Int64("after", 0, "print only the notes after this seq")
	wait := fs.Duration("wait", 0, "how long to wait for a note after --after, or the answer (at most 60s)")
	pos, err := parse(fs, args)
	if err != nil {
		return fail(std, "status", err)
	}
	if len(pos) != 1 {
		return fail(std, "status", usagef("usage: switchboard status <invocation> [--after N] [--wait 60s]"))
	}
	conn, err := rf.Dial()
	if err != nil {
		return fail(std, "status", err)
	}
	defer conn.Close()
	req := &mailboxv1.StatusRequest{Invocation: pos[0], After: *after}
	if *wait > 0 {
		req.Wait = durationpb.New(*wait)
	}
	out, err := mailboxv1.NewMailboxServiceClient(conn.Mailbox()).Status(conn.Ctx(ctx), req)
	if err != nil {
		return fail(std, "status", rpcError(err))
	}
	printStatus(std, out)
	return 0
}

// printStatus writes a status as lines a person reads: the phase, then one
// line per note, then how to collect an answer.
func printStatus(std IO, st *mailboxv1.StatusResponse) {
	phase := strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(st.GetPhase().String(), "PHASE_")), "_", " ")
	fmt.Fprintf(std.Stdout, "%s: %s, handed out %d times, expires in %v\n",
		st.GetInvocation(), phase, st.GetHandOffs(), st.GetExpiresIn().AsDuration().Round(time.Second))
	for _, n := range st.GetProgress() {
		fmt.Fprintln(std.Stdout, "  #"+strconv.FormatInt(n.GetSeq(), 10)+" "+noteLine(n))
	}
	if c := st.GetCapture(); c != nil {
		fmt.Fprintf(std.Stdout, "answered with exit code %d; collect it with: switchboard capture %s\n", c.GetExitCode(), st.GetInvocation())
	}
}

// noteLine is a note for a person: how far, a log message, a question the
// host asked, or that its answer reached the host.
func noteLine(n *mailboxv1.ProgressNote) string {
	switch {
	case n.GetQuestion() != nil:
		return "asks " + n.GetQuestion().GetMethod() + " (question " + n.GetQuestion().GetId() + ")"
	case n.GetAnswered() != "":
		return "question " + n.GetAnswered() + " answered"
	case n.GetLog() != nil:
		return "log " + n.GetLog().GetLevel() + ": " + n.GetLog().GetData()
	}
	line := strconv.FormatFloat(n.GetProgress(), 'g', -1, 64)
	if n.Total != nil {
		line += " of " + strconv.FormatFloat(n.GetTotal(), 'g', -1, 64)
	}
	if m := n.GetMessage(); m != "" {
		line += ": " + m
	}
	return line
}
