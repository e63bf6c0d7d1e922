// Package run runs one invocation of a local tool (docs/design.md §6): argv spawned
// directly (no shell, no interpolation) with an allowlisted environment
// (kit/lib/childenv), the input JSON on stdin, stdout,
// stderr and the exit code captured, and a deadline enforced with SIGTERM
// then SIGKILL to the tool's whole process group.
package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/lib/childenv"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
	"github.com/switchboard-run/switchboard/kit/suite/follower"
	"github.com/switchboard-run/switchboard/kit/suite/telemetry"
	"github.com/switchboard-run/switchboard/services/host/internal/toolsfile"
)

// Limits bound one run.
type Limits struct {
	// Deadline is how long a tool may run; zero: until ctx ends. The host
	// leaves it zero: its follower's run context carries the per-call
	// deadline (or the invocation's own timeout), and the sentence of
	// that context's cause says which.
	Deadline time.Duration
	// Grace is how long SIGTERM has before SIGKILL.
	Grace time.Duration
	// MaxOutput bounds what is kept of stdout and of stderr each; the rest is
	// read and counted, so a tool printing without end cannot fill memory.
	MaxOutput int
	// Roots are where a driver may send a tool that takes a cwd.
	Roots Roots
}

// Invocation is what the mailbox handed over.
type Invocation struct {
	ID       string
	Tool     string
	Input    string
	Cwd      *string
	Delivery int32
	// Progress receives the tool's progress lines (lines.go); nil
	// drops them. Either way they are kept out of the capture's stderr.
	Progress func(follower.Note)
	// Ask asks the driver a tool's question (asks.go); nil: it cannot be
	// asked, and the tool is told so at once.
	Ask func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
}

// Run runs inv with tool and returns its capture. ctx ending (a cancel, a
// shutdown) stops the tool like its deadline does.
func Run(ctx context.Context, tool *toolsfile.Tool, inv Invocation, lim Limits) *mailboxv1.Capture {
	dir := tool.Cwd
	if inv.Cwd != nil {
		if !tool.Advertised.GetSubjectCwd() {
			return capture.Failed(capture.ExitError, "switchboard: tool %q does not take a cwd (it was not advertised with subject_cwd: true); refusing to run it in %q", inv.Tool, *inv.Cwd)
		}
		d, err := lim.Roots.Dir(*inv.Cwd)
		if err != nil {
			return capture.Failed(capture.ExitError, "switchboard: %v; refusing to run tool %q there", err, inv.Tool)
		}
		dir = d
	}
	cmd := exec.Command(tool.Command[0], tool.Command[1:]...)
	cmd.Dir = dir
	// An allowlisted environment, never the host's own (its secrets, its
	// TLS paths): the tool's env, then what the protocol tells it.
	protocol := map[string]string{
		"SWITCHBOARD_INVOCATION": inv.ID, // the idempotency key, for tools that must not run twice
		"SWITCHBOARD_TOOL":       inv.Tool,
		"SWITCHBOARD_DELIVERY":   strconv.Itoa(int(inv.Delivery)),
		AnswersFD:                "3",
	}
	// The run's trace context, as the OpenTelemetry environment carrier
	// spells it: a traced tool's spans join the driver's trace.
	for field, v := range telemetry.Inject(ctx) {
		protocol[strings.ToUpper(field)] = v
	}
	cmd.Env = childenv.Environ(tool.Env, protocol)
	cmd.Stdin = strings.NewReader(inv.Input)
	stdout, stderr := &bounded{max: lim.MaxOutput}, &bounded{max: lim.MaxOutput}
	report := inv.Progress
	if report == nil {
		report = func(follower.Note) {}
	}
	// The run's questions end with it, whatever ends it.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	answers, err := newAnswerer(ctx, inv.Ask)
	if err != nil {
		return capture.Failed(capture.ExitNotFound, "switchboard: cannot start tool %q: no pipe for its answers: %v", inv.Tool, err)
	}
	defer answers.close()
	defer cancel() // before close, which waits for the questions to end
	cmd.ExtraFiles = []*os.File{answers.r}
	lines := &markedLines{out: stderr, report: report, ask: answers.line}
	cmd.Stdout, cmd.Stderr = stdout, lines
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A tool that exits but leaves a child holding its pipes must not hold
	// the capture hostage.
	cmd.WaitDelay = time.Second
	err = cmd.Start()
	_ = answers.r.Close() // the tool has its copy
	if err != nil {
		return capture.Failed(capture.ExitNotFound, "switchboard: cannot start tool %q (%s): %v", inv.Tool, tool.Command[0], err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	var deadline <-chan time.Time
	if lim.Deadline > 0 {
		timer := time.NewTimer(lim.Deadline)
		defer timer.Stop()
		deadline = timer.C
	}
	var stopped string
	select {
	case err = <-done:
	case <-deadline:
		stopped = fmt.Sprintf("switchboard: tool %q ran past its deadline of %v and was stopped", inv.Tool, lim.Deadline)
		err = stop(cmd, done, lim.Grace)
	case <-ctx.Done():
		stopped = fmt.Sprintf("switchboard: tool %q was stopped: %v", inv.Tool, context.Cause(ctx))
		err = stop(cmd, done, lim.Grace)
	}
	code := exitCode(cmd, err)
	lines.flush() // Wait has copied all of stderr
	errText := stderr.text()
	if stopped != "" {
		code = capture.ExitTimeout
		if errText != "" && !strings.HasSuffix(errText, "\n") {
			errText += "\n"
		}
		errText += stopped
	}
	return capture.New(stdout.text(), errText, code)
}

// stop sends SIGTERM to the process group, then SIGKILL after grace, and
// returns Wait's error.
func stop(cmd *exec.Cmd, done <-chan error, grace time.Duration) error {
	pgid := -cmd.Process.Pid
	_ = syscall.Kill(pgid, syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		_ = syscall.Kill(pgid, syscall.SIGKILL)
		return <-done
	}
}

// exitCode is the process's exit status; a death by signal is 128+signal,
// as shells report it.
func exitCode(cmd *exec.Cmd, err error) int32 {
	if st, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && st.Signaled() {
		return int32(128 + int(st.Signal()))
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) || err == nil || errors.Is(err, exec.ErrWaitDelay) {
		return int32(cmd.ProcessState.ExitCode())
	}
	return capture.ExitError
}

// bounded keeps the first max bytes written and counts the rest.
type bounded struct {
	max     int
	buf     []byte
	dropped int64
}

func (b *bounded) Write(p []byte) (int, error) {
	room := b.max - len(b.buf)
	if room >= len(p) {
		b.buf = append(b.buf, p...)
	} else {
		if room > 0 {
			b.buf = append(b.buf, p[:room]...)
		}
		b.dropped += int64(len(p) - max(room, 0))
	}
	return len(p), nil
}

// text is the output as UTF-8 text, with a marker when some was dropped.
func (b *bounded) text() string {
	s := capture.Text(b.buf)
	if b.dropped > 0 {
		s += fmt.Sprintf("\n[truncated: %d more bytes not shown]", b.dropped)
	}
	return s
}
