package bridge

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/bridge/internal/plugin"
)

// A plugin backend's life as the bridge runs it: started at mount or at its
// first call, failing when it cannot start, stopped at unmount; and the
// ways to mount one (a config file, the CLI).

func TestUnmountKillsABackendThatIgnoresShutdown(t *testing.T) {
	t.Parallel()
	s := newSuite(t, timing{})
	m := fake(t, "-stubborn")
	m.StartAtMount = true
	if st := s.mount(t, "fake", pluginServer(m)); st.GetState() != bridgev1.State_STATE_RUNNING {
		t.Fatalf("start_at_mount: status = %v", st)
	}
	pid := s.backend(t, "fake").PID()
	began := time.Now()
	un, err := s.bridge.Unmount(admin, &bridgev1.UnmountRequest{Client: "fake"})
	took := time.Since(began)
	if err != nil {
		t.Fatal(err)
	}
	if syscallKill0(pid) == nil {
		t.Errorf("process %d is alive after Unmount", pid)
	}
	if took < plugin.Grace || took > plugin.Grace+3*time.Second {
		t.Errorf("Unmount took %v; want the grace (%v), then a kill", took, plugin.Grace)
	}
	if un.GetServer().GetState() != bridgev1.State_STATE_STOPPED || len(s.advertised(t, "fake")) != 0 {
		t.Errorf("after Unmount: %v, advertised %v", un.GetServer(), s.advertised(t, "fake"))
	}
	t.Logf("Unmount of a backend that ignores shutdown took %v", took)
}

func TestStartAtMountSendsInitBeforeAnyCall(t *testing.T) {
	t.Parallel()
	s := newSuite(t, timing{})
	m := fake(t)
	m.StartAtMount = true
	st := s.mount(t, "fake", pluginServer(m))
	if st.GetState() != bridgev1.State_STATE_RUNNING || s.backend(t, "fake").PID() == 0 {
		t.Fatalf("status = %v; want running at mount", st)
	}
	if got := s.call(t, "fake", "seen", `{}`); got.GetStdout() != `["init","request"]` {
		t.Errorf("the backend was sent %s", got.GetStdout())
	}
}

func TestAPluginThatCannotStartFailsAfterTheCrashLimit(t *testing.T) {
	t.Parallel()
	s := newSuite(t, fast)
	m := fake(t)
	m.Command = []string{"/no/such/backend"}
	st := s.mount(t, "ghost", &bridgev1.ServerConfig{Transport: pluginServer(m).Transport, CrashLimit: 2})
	if st.GetState() != bridgev1.State_STATE_IDLE {
		t.Fatalf("status = %v; a lazy backend is idle until its first call", st)
	}
	want := captureOf("", `tool "echo" of "ghost" was not run: could not start the plugin backend: fork/exec /no/such/backend: no such file or directory`, capture.ExitNotFound)
	if got := s.call(t, "ghost", "echo", `{}`); !proto.Equal(got, want) {
		t.Errorf("capture = %v\nwant %v", got, want)
	}
	s.awaitState(t, "ghost", bridgev1.State_STATE_FAILED)
	// The state changes a moment before the fault that says why is kept.
	testkit.Eventually(t, "the failure recorded", 20*time.Second, func() bool {
		return strings.HasPrefix(s.row(t, "ghost").GetLastFault(), "failed after 2 crashes in a row")
	})
	if last := s.row(t, "ghost").GetLastFault(); !strings.Contains(last, "could not start the plugin backend: fork/exec /no/such/backend") {
		t.Errorf("last fault = %q", last)
	}
	testkit.Eventually(t, "the tools withdrawn", 20*time.Second, func() bool { return len(s.advertised(t, "ghost")) == 0 })
}

func TestPluginCallsTheBackendCannotTakeAreRefusedBeforeTheyAreSent(t *testing.T) {
	t.Parallel()
	s := newSuite(t, timing{})
	s.mount(t, "fake", &bridgev1.ServerConfig{Transport: pluginServer(fake(t)).Transport, DenyTools: []string{"fail"}})
	res, err := s.mb.Call(driver, &mailboxv1.CallRequest{Client: "fake", Tool: "echo", Input: `{}`, Cwd: proto.String("/tmp")})
	if err != nil {
		t.Fatal(err)
	}
	want := captureOf("", `tool "echo" does not take a cwd: a plugin backend is not told a working directory, so it was not called`, 1)
	if !proto.Equal(res.GetCapture(), want) {
		t.Errorf("capture = %v", res.GetCapture())
	}
	s.svc.mu.Lock()
	m := s.svc.entries["fake"].mounted()
	s.svc.mu.Unlock()
	// The registry refuses an invocation of a denied tool already; the
	// bridge checks again, as the advertisement may have changed since.
	got := m.refusePlugin(&mailboxv1.Invocation{Invocation: "inv-x", Tool: "fail", Input: `{}`})
	if got.GetExitCode() != capture.ExitNotFound || got.GetStderr() != `plugin backend "fake" does not advertise a tool "fail", so it was not called` {
		t.Errorf("capture = %v", got)
	}
	if s.backend(t, "fake").Started() {
		t.Error("a refused call started the backend")
	}
}

func TestMountConfigMountsAPluginEntry(t *testing.T) {
	t.Parallel()
	s := newSuite(t, timing{})
	dir := t.TempDir()
	man := `{"command":["` + testkit.Build(t, notebookPkg) + `"],"startAtMount":true,
		"tools":[{"name":"list","description":"lists keys","input_schema":{"type":"object"}}]}`
	writeIn(t, dir, "notebook.json", man)
	cfg := writeIn(t, dir, "mcp.json", `{"mcpServers":{"notes":{"type":"plugin","manifest":"notebook.json"}}}`)
	if err := s.svc.MountConfig(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	row := s.row(t, "notes")
	if row.GetState() != bridgev1.State_STATE_RUNNING || row.GetTransport() != "plugin" || row.GetToolCount() != 1 {
		t.Errorf("row = %v", row)
	}
	if got := s.call(t, "notes", "list", `{}`); got.GetStdout() != "[]" {
		t.Errorf("capture = %v", got)
	}
}

func writeIn(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// The README's way: `switchboard mcp mount NAME --plugin manifest.json`,
// with a manifest whose command is relative to where the command is run.
func TestTheCLIMountsAPluginManifest(t *testing.T) {
	t.Parallel()
	s := newSuite(t, timing{})
	cli := testkit.Build(t, "github.com/switchboard-run/switchboard/cli/cmd/switchboard")
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o700); err != nil {
		t.Fatal(err)
	}
	// As `go build -o bin/notebook ./examples/notebook` would leave it.
	if err := os.Symlink(testkit.Build(t, notebookPkg), filepath.Join(dir, "bin", "notebook")); err != nil {
		t.Fatal(err)
	}
	manifest, err := os.ReadFile(filepath.Join(testkit.RepoRoot(t), "examples", "notebook", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	writeIn(t, dir, "manifest.json", string(manifest)) // its command is "bin/notebook"
	cmd := exec.Command(cli, "mcp", "mount", "notes", "--plugin", "manifest.json", "--addr", s.addr, "--as", "ops")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("switchboard mcp mount: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "notes") || !strings.Contains(string(out), "plugin") || !strings.Contains(string(out), "idle") {
		t.Errorf("the command printed:\n%s", out)
	}
	if got := s.call(t, "notes", "put", `{"key":"k","value":"v"}`); got.GetStdout() != `stored "k"` {
		t.Errorf("capture = %v", got)
	}
}
