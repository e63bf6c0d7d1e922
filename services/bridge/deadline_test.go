package bridge

import (
	"fmt"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// awaitCapture collects an invocation's capture, waiting for it.
func (s *suite) awaitCapture(t *testing.T, id string) *mailboxv1.Capture {
	t.Helper()
	res, err := s.mb.Capture(driver, &mailboxv1.CaptureRequest{Invocation: id, Wait: durationpb(60 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	return res.GetCapture()
}

func (b *blocker) awaitCancelled(t *testing.T, want string) {
	t.Helper()
	select {
	case got := <-b.cancelled:
		if got != want {
			t.Errorf("cancelled %q, want %q", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server's handler was never cancelled: notifications/cancelled did not arrive")
	}
}

// A server that never answers a call holds it only until the per-call
// deadline: the call is cancelled upstream (the server sees
// notifications/cancelled) and answered with exit code 124 and a sentence.
// The invocation's own timeout, when shorter, beats the config's.
func TestANeverAnsweredCallIsCancelledAtItsDeadline(t *testing.T) {
	t.Parallel()
	b := newBlocker(t)
	s := newSuite(t, timing{}) // stopped first, before the server it calls
	cfg := httpServer(b.url)
	cfg.CallTimeout = durationpb(300 * time.Millisecond)
	s.mount(t, "stuck", cfg)
	id := s.invoke(t, "stuck", "hold", `{"id":"one"}`)
	c := s.awaitCapture(t, id)
	want := `MCP tool "hold" of "stuck" was stopped and cancelled upstream: it ran past the per-call deadline of 300ms`
	if c.GetExitCode() != capture.ExitTimeout || c.GetStderr() != want {
		t.Errorf("capture = %v; want exit 124 and %q", c, want)
	}
	b.awaitCancelled(t, "one")

	cfg = httpServer(b.url)
	cfg.CallTimeout = durationpb(time.Hour)
	s.mount(t, "patient", cfg)
	// The invocation's timeout counts from its post, so on a busy machine it
	// may run out before the bridge starts it ("was not run"), which is not
	// what this checks: then try again with a longer one.
	for timeout := 300 * time.Millisecond; ; timeout *= 4 {
		res, err := s.mb.Invoke(driver, &mailboxv1.InvokeRequest{Client: "patient", Tool: "hold", Input: `{"id":"two"}`,
			Timeout: durationpb(timeout)})
		if err != nil {
			t.Fatal(err)
		}
		c = s.awaitCapture(t, res.GetInvocation())
		if strings.Contains(c.GetStderr(), "ran out before it could start") && timeout < 10*time.Second {
			t.Logf("not started within %v: %s", timeout, c.GetStderr())
			continue
		}
		want = fmt.Sprintf(`MCP tool "hold" of "patient" was stopped and cancelled upstream: its timeout of %v ran out`, timeout)
		if c.GetExitCode() != capture.ExitTimeout || c.GetStderr() != want {
			t.Errorf("capture = %v; want exit 124 and %q", c, want)
		}
		break
	}
	b.awaitCancelled(t, "two")
}

// A server that stays up but stops answering pings counts as crashed: the
// supervisor restarts it, and it serves again once it answers.
func TestAServerThatStopsAnsweringPingsIsRestarted(t *testing.T) {
	t.Parallel()
	b := newBlocker(t)
	s := newSuite(t, fast) // stopped first, before the server it calls
	cfg := httpServer(b.url)
	cfg.PingInterval, cfg.PingTimeout = durationpb(50*time.Millisecond), durationpb(time.Second)
	s.mount(t, "mute", cfg)
	b.mute.Store(true)
	testkit.Eventually(t, "a restart after unanswered pings", 30*time.Second, func() bool {
		row := s.row(t, "mute")
		return row.GetRestarts() >= 1 && strings.Contains(strings.Join(row.GetFaults(), "\n"),
			"the server did not answer a ping within 1s, so it counts as crashed")
	})
	b.mute.Store(false)
	testkit.Eventually(t, "running again", 30*time.Second, func() bool {
		return s.row(t, "mute").GetState() == bridgev1.State_STATE_RUNNING
	})
	id := s.invoke(t, "mute", "hold", `{"id":"after"}`)
	b.awaitStarted(t)
	close(b.release)
	if c := s.awaitCapture(t, id); c.GetStdout() != "released after" {
		t.Errorf("capture after the restart = %v", c)
	}
}

// A stdio server that is alive but frozen (the conformance server, stopped
// with SIGSTOP) answers no ping: it is killed and a new process started.
func TestAFrozenStdioServerIsKilledAndRestarted(t *testing.T) {
	t.Parallel()
	s := newSuite(t, fast)
	cfg := stdioServer(testkit.Tool(t, "everything-server"))
	cfg.PingInterval, cfg.PingTimeout = durationpb(100*time.Millisecond), durationpb(time.Second)
	s.mount(t, "frozen", cfg)
	before := s.pid(t, "frozen")
	if err := syscall.Kill(before, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	var row *bridgev1.ServerStatus
	testkit.Eventually(t, "a restart", 30*time.Second, func() bool {
		row = s.row(t, "frozen")
		return row.GetRestarts() == 1 && row.GetState() == bridgev1.State_STATE_RUNNING
	})
	if !contains(row.GetFaults(), "crashed (1 in a row): the server did not answer a ping within 1s, so it counts as crashed") {
		t.Errorf("faults = %q, want the unanswered ping named", row.GetFaults())
	}
	if after := s.pid(t, "frozen"); after == before || syscall.Kill(before, 0) == nil {
		t.Errorf("pid %d → %d; want the frozen process gone and a new one", before, after)
	}
	if got := s.call(t, "frozen", "test_simple_text", `{}`); got.GetExitCode() != 0 {
		t.Errorf("the call after the restart: %v", got)
	}
}

// With max_in_flight 2 and fifty invocations queued, the bridge runs two
// and reads one ahead: the rest stay with the mailbox, holding no goroutine
// here, and the server never sees more than two at once.
//
// Not parallel: it counts the runs' goroutines of the whole process.
func TestMaxInFlightLeavesTheBacklogWithTheMailbox(t *testing.T) {
	b := newBlocker(t)
	s := newSuite(t, timing{}) // stopped first, before the server it calls
	s.mount(t, "slow", &bridgev1.ServerConfig{Transport: httpServer(b.url).Transport, MaxInFlight: 2})
	m := s.svc.entries["slow"].mounted()
	ids := []string{s.invoke(t, "slow", "hold", `{"id":"0"}`), s.invoke(t, "slow", "hold", `{"id":"1"}`)}
	b.awaitStarted(t)
	b.awaitStarted(t)
	for i := 2; i < 50; i++ {
		ids = append(ids, s.invoke(t, "slow", "hold", `{"id":"`+string(rune('0'+i%10))+`"}`))
	}
	// Two running, and one read ahead: with every slot busy the follower
	// reads on until one waits, so a cancel of a running call still
	// reaches it.
	testkit.Eventually(t, "one read ahead", 10*time.Second, func() bool { return m.follower.Held() == 3 })
	if row := s.row(t, "slow"); row.GetInFlight() != 2 {
		t.Errorf("in_flight = %d, want 2", row.GetInFlight())
	}
	if held := m.follower.Held(); held != 3 {
		t.Errorf("the bridge holds %d invocations with max_in_flight 2; want 2 running and 1 read ahead", held)
	}
	if runs := runGoroutines(); runs != 2 {
		t.Errorf("%d run goroutines with 50 invocations queued and max_in_flight 2", runs)
	}
	close(b.release)
	for _, id := range ids {
		if c := s.awaitCapture(t, id); c.GetExitCode() != 0 {
			t.Errorf("capture of %s = %v", id, c)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.most > 2 {
		t.Errorf("the server held %d calls at once with max_in_flight 2", b.most)
	}
}

// runGoroutines counts the goroutines running a follower's call.
func runGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "follower.(*Follower).serve(")
		}
		buf = make([]byte, 2*len(buf))
	}
}
