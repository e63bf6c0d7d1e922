package bridge

import (
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/bridge/internal/plugin"
)

// The example backend, and a backend whose tools each exercise one part of
// the wire.
const (
	notebookPkg = "github.com/switchboard-run/switchboard/examples/notebook"
	fakePkg     = "github.com/switchboard-run/switchboard/services/bridge/internal/plugin/testdata/fakebackend"
)

// notebook is the example's own manifest, its command pointed at a fresh
// build of the example.
func notebook(t testing.TB) *bridgev1.ServerConfig {
	t.Helper()
	m, err := LoadPluginManifest(filepath.Join(testkit.RepoRoot(t), "examples", "notebook", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	m.Command = []string{testkit.Build(t, notebookPkg)}
	return &bridgev1.ServerConfig{Transport: &bridgev1.ServerConfig_Plugin{Plugin: m}}
}

// fake is a manifest for the fake backend run with args.
func fake(t testing.TB, args ...string) *bridgev1.PluginManifest {
	t.Helper()
	m := &bridgev1.PluginManifest{Command: append([]string{testkit.Build(t, fakePkg)}, args...)}
	for _, name := range []string{"echo", "text", "fail", "chatty", "crash", "hang", "big", "whoami", "seen", "progress"} {
		m.Tools = append(m.Tools, &registryv1.Tool{Name: name, Description: "exercises " + name, InputSchema: `{"type":"object"}`})
	}
	return m
}

func pluginServer(m *bridgev1.PluginManifest) *bridgev1.ServerConfig {
	return &bridgev1.ServerConfig{Transport: &bridgev1.ServerConfig_Plugin{Plugin: m}}
}

// backend is client's current plugin backend.
func (s *suite) backend(t testing.TB, client string) *plugin.Backend {
	t.Helper()
	s.svc.mu.Lock()
	m := s.svc.entries[client].mounted()
	s.svc.mu.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.backend == nil {
		t.Fatalf("%s has no backend", client)
	}
	return m.backend
}

func TestANotebookRoundTripThroughTheMailbox(t *testing.T) {
	t.Parallel()
	s := newSuite(t, timing{})
	st := s.mount(t, "notes", notebook(t))
	if st.GetState() != bridgev1.State_STATE_IDLE || st.GetTransport() != "plugin" || st.GetToolCount() != 4 {
		t.Fatalf("Mount's status = %v; want idle until the first call, with the manifest's 4 tools advertised", st)
	}
	if got := s.advertised(t, "notes"); !got["put"] || !got["get"] || !got["list"] || !got["delete"] {
		t.Errorf("advertised %v", got)
	}
	if s.backend(t, "notes").Started() {
		t.Fatal("the backend started before its first call")
	}
	resolved, err := s.reg.ResolveTool(driver, &registryv1.ResolveToolRequest{PresentedName: "notes_put"})
	if err != nil || resolved.GetClient() != "notes" || resolved.GetTool().GetName() != "put" {
		t.Fatalf("notes_put resolves to %v, %v", resolved, err)
	}
	steps := []struct {
		name, tool, input string
		want              *mailboxv1.Capture
	}{
		{"put stores a note", "put", `{"key":"greeting","value":"hello <world>"}`, captureOf(`stored "greeting"`, "", 0)},
		{"get reads it back as text", "get", `{"key":"greeting"}`, captureOf("hello <world>", "", 0)},
		{"list is a JSON array", "list", `{}`, captureOf(`["greeting"]`, "", 0)},
		{"delete removes it", "delete", `{"key":"greeting"}`, captureOf(`deleted "greeting"`, "", 0)},
		{"an error reply is exit 1 with its text on stderr", "get", `{"key":"greeting"}`,
			captureOf("", `no note "greeting" in the notebook; list shows the keys it holds`, 1)},
	}
	for _, step := range steps { // in order: each step sees the notebook the last left
		got := s.call(t, "notes", step.tool, step.input)
		if !proto.Equal(got, step.want) {
			t.Errorf("%s: capture = %v\nwant %v", step.name, got, step.want)
		}
		// The backend logs each request before replying: by the time the
		// capture is back, the log line is the newest notice.
		if notices := s.row(t, "notes").GetNotices(); len(notices) == 0 || notices[len(notices)-1] != "log: "+step.tool+" "+step.input {
			t.Errorf("%s: newest notice is not the request's log line: %q", step.name, notices)
		}
	}
	row := s.row(t, "notes")
	if row.GetState() != bridgev1.State_STATE_RUNNING || row.GetRestarts() != 0 || row.GetInFlight() != 0 {
		t.Errorf("row after the calls = %v", row)
	}
	if !strings.Contains(row.GetStderrTail(), `notebook for "notes" started (restart 0): it is empty`) {
		t.Errorf("stderr tail = %q, want the init log line", row.GetStderrTail())
	}
}

// Everything a backend sends during a request is in status, in the order
// sent, by the time its reply is the capture; unknown types are ignored.
func TestPluginMessagesBeforeTheReplyAreInStatusInOrder(t *testing.T) {
	t.Parallel()
	s := newSuite(t, timing{})
	s.mount(t, "fake", pluginServer(fake(t)))
	if got := s.call(t, "fake", "chatty", `{}`); !proto.Equal(got, captureOf("done", "", 0)) {
		t.Fatalf("capture = %v", got)
	}
	row := s.row(t, "fake")
	want := []string{
		"log: one",
		"notice (info): two",
		`view: {"id":"v","key":"","type":"view","view":{"text":"three","type":"text"}}`,
		`notify: {"msg":"four","type":"notify"}`,
		`subscribe: {"events":["five"],"type":"subscribe"}`,
	}
	if !slices.Equal(row.GetNotices(), want) {
		t.Errorf("notices = %q\nwant      %q", row.GetNotices(), want)
	}
	if row.GetLastFault() != "the backend reported: six" || contains(row.GetNotices(), "from the future") {
		t.Errorf("last fault %q; notices %q", row.GetLastFault(), row.GetNotices())
	}
}

func TestAPluginCrashMidRequestIsAnsweredAndTheBackendRestarts(t *testing.T) {
	t.Parallel()
	s := newSuite(t, fast)
	s.mount(t, "fake", pluginServer(fake(t)))
	if got := s.call(t, "fake", "whoami", `{}`); got.GetStdout() != `{"client":"fake","restart":0}` {
		t.Fatalf("first init: %v", got)
	}
	before := s.backend(t, "fake").PID()
	got := s.call(t, "fake", "crash", `{"code":3}`)
	want := captureOf("", `plugin backend "fake" crashed while running tool "crash": the plugin backend exited (exit status 3); it may have done part of the work, so read the world before acting again`, 1)
	if !proto.Equal(got, want) {
		t.Errorf("capture = %v\nwant %v", got, want)
	}
	var row *bridgev1.ServerStatus
	testkit.Eventually(t, "a restart", 20*time.Second, func() bool {
		row = s.row(t, "fake")
		return row.GetRestarts() == 1 && row.GetState() == bridgev1.State_STATE_RUNNING
	})
	if !contains(row.GetFaults(), "crashed (1 in a row): the plugin backend exited (exit status 3)") {
		t.Errorf("faults = %q, want the crash named", row.GetFaults())
	}
	if got := s.call(t, "fake", "whoami", `{}`); got.GetStdout() != `{"client":"fake","restart":1}` {
		t.Errorf("init after the restart: %v", got)
	}
	if after := s.backend(t, "fake").PID(); after == before {
		t.Errorf("pid %d → %d, want a new process", before, after)
	}
}

// The notebook lives in memory: a restart is visible as an empty notebook.
func TestAKilledNotebookComesBackEmpty(t *testing.T) {
	t.Parallel()
	s := newSuite(t, fast)
	s.mount(t, "notes", notebook(t))
	s.call(t, "notes", "put", `{"key":"k","value":"v"}`)
	if err := syscall.Kill(s.backend(t, "notes").PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "a restart", 20*time.Second, func() bool {
		row := s.row(t, "notes")
		return row.GetRestarts() == 1 && row.GetState() == bridgev1.State_STATE_RUNNING
	})
	if got := s.call(t, "notes", "list", `{}`); got.GetStdout() != `[]` {
		t.Errorf("list after the restart = %v", got)
	}
	row := s.row(t, "notes")
	if !contains(row.GetNotices(), `notebook for "notes" started (restart 1): it is empty`) {
		t.Errorf("notices = %q", row.GetNotices())
	}
	if !contains(row.GetFaults(), "crashed (1 in a row): the plugin backend exited (signal: killed)") {
		t.Errorf("faults = %q", row.GetFaults())
	}
}

func TestCancellingAPluginCallSendsCancelAndTheNextCallGoes(t *testing.T) {
	t.Parallel()
	s := newSuite(t, timing{})
	s.mount(t, "fake", pluginServer(fake(t)))
	id := s.invoke(t, "fake", "hang", `{}`)
	testkit.Eventually(t, "the call in flight", 20*time.Second, func() bool { return s.row(t, "fake").GetInFlight() == 1 })
	res, err := s.mb.Cancel(driver, &mailboxv1.CancelRequest{Invocation: id})
	if err != nil {
		t.Fatal(err)
	}
	if res.GetCapture().GetExitCode() != capture.ExitCancelled {
		t.Errorf("the cancelled capture = %v", res.GetCapture())
	}
	if got := s.call(t, "fake", "text", `{"text":"next"}`); got.GetStdout() != "next" {
		t.Errorf("the call after the cancelled one = %v", got)
	}
	if got := s.call(t, "fake", "seen", `{}`); got.GetStdout() != `["init","request","cancel","request","request"]` {
		t.Errorf("the backend was sent %s", got.GetStdout())
	}
	notices := s.row(t, "fake").GetNotices()
	if !contains(notices, "invocation "+id+" was cancelled by its poster") || !contains(notices, "dropped the late reply to request 1, which was cancelled") {
		t.Errorf("notices = %q", notices)
	}
}

func TestAnOversizedPluginLineIsAFaultAndTheCallIsAnswered(t *testing.T) {
	t.Parallel()
	s := newSuite(t, timing{})
	m := fake(t)
	m.MaxLineBytes = 1000
	s.mount(t, "fake", pluginServer(m))
	if got := s.call(t, "fake", "big", `{"bytes":5000}`); got.GetStdout() != "after big" {
		t.Errorf("capture = %v", got)
	}
	if got := s.row(t, "fake").GetLastFault(); got != "dropped a 5024-byte line from the backend: lines are bounded to 1000 bytes (max_line_bytes)" {
		t.Errorf("last fault = %q", got)
	}
}
