package bridge

import (
	"strings"
	"syscall"
	"testing"
	"time"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// pid is the mounted stdio server's current process id.
func (s *suite) pid(t testing.TB, client string) int {
	t.Helper()
	s.svc.mu.Lock()
	m := s.svc.entries[client].mounted()
	s.svc.mu.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sess == nil {
		t.Fatalf("%s has no session", client)
	}
	return m.sess.PID()
}

func TestKilledStdioServerIsRestartedAndServesAgain(t *testing.T) {
	t.Parallel()
	s := newSuite(t, fast)
	s.mount(t, "conf", stdioServer(testkit.Tool(t, "everything-server")))
	if got := s.call(t, "conf", "test_simple_text", `{}`); got.GetExitCode() != 0 {
		t.Fatalf("first call: %v", got)
	}
	// Changing the tool list first shows the restart re-lists: the new
	// process has no transient tool, and the registry must learn so.
	s.call(t, "conf", "test_trigger_tool_change", `{}`)
	testkit.Eventually(t, "the transient tool advertised", 20*time.Second, func() bool { return s.advertised(t, "conf")["__transient_tool_for_list_changed"] })

	before := s.pid(t, "conf")
	if err := syscall.Kill(before, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var row *bridgev1.ServerStatus
	testkit.Eventually(t, "a restart", 20*time.Second, func() bool {
		row = s.row(t, "conf")
		return row.GetRestarts() == 1 && row.GetState() == bridgev1.State_STATE_RUNNING
	})
	if !contains(row.GetFaults(), "crashed (1 in a row): the server process exited (signal: killed)") {
		t.Errorf("faults = %q, want the crash named", row.GetFaults())
	}
	testkit.Eventually(t, "the last fault cleared once it runs again", 20*time.Second, func() bool {
		return s.row(t, "conf").GetLastFault() == ""
	})
	if after := s.pid(t, "conf"); after == before || after == 0 {
		t.Errorf("pid %d → %d, want a new process", before, after)
	}
	testkit.Eventually(t, "the re-listed tools advertised", 20*time.Second, func() bool {
		tools := s.advertised(t, "conf")
		return tools["test_simple_text"] && !tools["__transient_tool_for_list_changed"]
	})
	if got := s.call(t, "conf", "test_simple_text", `{}`); got.GetStdout() != "This is a simple text response for testing." {
		t.Errorf("the call after the restart: %v", got)
	}
}

func TestRestartedHTTPServerIsReinitialisedAndServesAgain(t *testing.T) {
	t.Parallel()
	s := newSuite(t, fast)
	bin := testkit.Tool(t, "everything-server")
	addr := testkit.FreeAddr(t)
	first := testkit.StartHTTP(t, bin, addr, "-stateless=false")
	st := s.mount(t, "web", httpServer("http://"+addr+"/"))
	if st.GetState() != bridgev1.State_STATE_RUNNING {
		t.Fatalf("status = %v", st)
	}
	first.Kill()
	testkit.StartHTTP(t, bin, addr, "-stateless=false") // same port; the session is gone
	if got := s.call(t, "web", "test_simple_text", `{}`); got.GetStdout() != "This is a simple text response for testing." {
		t.Fatalf("the call after the server's restart: %v", got)
	}
	row := s.row(t, "web")
	if !contains(row.GetFaults(), "expired (the server answered 404); re-initialised") {
		t.Errorf("faults = %q, want the re-initialisation recorded", row.GetFaults())
	}
	if row.GetState() != bridgev1.State_STATE_RUNNING || row.GetToolCount() == 0 {
		t.Errorf("row = %v", row)
	}
}

func TestAServerThatExitsAtOnceFailsAfterTheCrashLimit(t *testing.T) {
	t.Parallel()
	s := newSuite(t, fast)
	// It held tools once (as after an earlier run): failing must withdraw them.
	s.mount(t, "flaky", stdioServer(testkit.Tool(t, "everything-server")))
	if !s.advertised(t, "flaky")["test_simple_text"] {
		t.Fatal("nothing advertised")
	}
	st := s.mount(t, "flaky", &bridgev1.ServerConfig{
		Transport:  stdioServer("/bin/sh", "-c", "echo cannot open the database >&2; exit 3").Transport,
		CrashLimit: 3,
	})
	if st.GetState() == bridgev1.State_STATE_RUNNING {
		t.Fatalf("a server that exits at once is running: %v", st)
	}
	s.awaitState(t, "flaky", bridgev1.State_STATE_FAILED)
	// The state changes a moment before the fault that says why is kept.
	var row *bridgev1.ServerStatus
	testkit.Eventually(t, "the failure recorded", 20*time.Second, func() bool {
		row = s.row(t, "flaky")
		return strings.HasPrefix(row.GetLastFault(), "failed after")
	})
	if row.GetRestarts() != 2 {
		t.Errorf("restarts = %d, want 2 (3 starts)", row.GetRestarts())
	}
	if !strings.Contains(row.GetLastFault(), "failed after 3 crashes in a row") || !strings.Contains(row.GetLastFault(), "exit status 3") {
		t.Errorf("last fault = %q", row.GetLastFault())
	}
	if !strings.Contains(row.GetStderrTail(), "cannot open the database") {
		t.Errorf("stderr tail = %q", row.GetStderrTail())
	}
	testkit.Eventually(t, "the tools withdrawn", 20*time.Second, func() bool { return len(s.advertised(t, "flaky")) == 0 })
	if row.GetToolCount() != 0 {
		t.Errorf("tool_count = %d after failing", row.GetToolCount())
	}
	// Mounting again clears failed.
	st = s.mount(t, "flaky", stdioServer(testkit.Tool(t, "everything-server")))
	if st.GetState() != bridgev1.State_STATE_RUNNING || st.GetRestarts() != 0 {
		t.Errorf("after mounting again: %v", st)
	}
}
