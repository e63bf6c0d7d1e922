package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

func TestRepliesBecomeCaptures(t *testing.T) {
	t.Parallel()
	b, _ := start(t, nil, 0)
	tests := []struct {
		name, tool, args string
		want             *mailboxv1.Capture
	}{
		{"a string result is the text itself", "text", `{"text":"hello\nworld"}`, capture.New("hello\nworld", "", 0)},
		{"any other result is its compact JSON", "echo", "{\n  \"a\": [1, 2],\n  \"b\": \"<&>\"\n}", capture.New(`{"a":[1,2],"b":"<&>"}`, "", 0)},
		{"an error is exit 1 with its text on stderr", "fail", `{"text":"disk full"}`, capture.New("", "it failed: disk full", 1)},
		{"a reply with neither is a failure naming the tool", "empty", `{}`,
			capture.New("", `plugin backend "notes" replied to tool "empty" with neither a result nor an error`, 1)},
		{"a tool the backend does not know is its error", "nope", `{}`, capture.New("", "no tool nope", 1)},
		{"an mcp_result beside a result is a failure", "mcpboth", `{}`,
			capture.New("", `plugin backend "notes" replied to tool "mcpboth" with "mcp_result" beside "result" or "error"; a reply carries one of them`, 1)},
	}
	for _, tt := range tests { // one backend, one call at a time: not parallel
		t.Run(tt.name, func(t *testing.T) {
			if got := answered(t, b, tt.tool, tt.args); !proto.Equal(got, tt.want) {
				t.Errorf("capture = %v\nwant      %v", got, tt.want)
			}
		})
	}
}

// A reply's mcp_result travels whole, as a mounted server's result does:
// the image's bytes and the structured content reach an MCP driver, and
// stdout is its text for every other driver.
func TestAnMCPResultReplyTravelsWhole(t *testing.T) {
	t.Parallel()
	b, _ := start(t, nil, 0)
	got := answered(t, b, "chart", `{"text":"three points"}`)
	if got.GetExitCode() != 0 || got.GetStdout() != "three points\n[image content]" {
		t.Errorf("capture = %v; want exit 0 and stdout naming the text and the image", got)
	}
	var whole struct {
		Content []struct {
			Type, Text, Data, MimeType string
		}
		StructuredContent map[string]int
	}
	if err := json.Unmarshal([]byte(got.GetMcpResult()), &whole); err != nil {
		t.Fatalf("mcp_result %q: %v", got.GetMcpResult(), err)
	}
	if len(whole.Content) != 2 || whole.Content[1].Data != "iVBORw0KGgo=" || whole.Content[1].MimeType != "image/png" || whole.StructuredContent["points"] != 3 {
		t.Errorf("mcp_result = %s; want the image block and the structured content as sent", got.GetMcpResult())
	}
	bad := answered(t, b, "mcpbad", `{}`)
	if bad.GetExitCode() != 1 || !strings.Contains(bad.GetStderr(), `replied to tool "mcpbad" with an mcp_result that is not an MCP tool result`) {
		t.Errorf("a malformed mcp_result: %v", bad)
	}
}

func TestCallsAreSentOneAtATimeInTheOrderSubmitted(t *testing.T) {
	t.Parallel()
	b, r := start(t, nil, 0)
	calls := make([]*Call, 20)
	for i := range calls {
		calls[i] = b.Submit(context.Background(), "echo", fmt.Sprintf(`{"n":%d}`, i), Hearing{})
	}
	var want []string
	for i, c := range calls {
		if got, answer := c.Wait(); !answer || got.GetStdout() != fmt.Sprintf(`{"n":%d}`, i) {
			t.Errorf("call %d = %v", i, got)
		}
		want = append(want, fmt.Sprintf(`log: echo {"n":%d}`, i))
	}
	if notices, _, _ := r.snapshot(); !slices.Equal(notices, want) {
		t.Errorf("the backend ran them in this order: %q", notices)
	}
}

func TestInitComesFirstAndCarriesTheRestartCount(t *testing.T) {
	t.Parallel()
	b, _ := start(t, nil, 3)
	if b.Started() || b.PID() != 0 {
		t.Fatal("the backend started before its first call")
	}
	if got := answered(t, b, "whoami", `{}`); got.GetStdout() != `{"client":"notes","restart":3}` {
		t.Errorf("init as the backend saw it: %v", got)
	}
	if !b.Started() || b.PID() == 0 {
		t.Error("the first call did not start the backend")
	}
	if got := answered(t, b, "seen", `{}`); got.GetStdout() != `["init","request","request"]` {
		t.Errorf("the backend was sent %s", got.GetStdout())
	}
}

// Messages sent during a request are reported, in order, before the reply
// answers it; unknown types are ignored.
func TestMessagesBeforeAReplyAreReportedInOrderFirst(t *testing.T) {
	t.Parallel()
	b, r := start(t, nil, 0)
	if got := answered(t, b, "chatty", `{}`); got.GetStdout() != "done" {
		t.Fatalf("capture = %v", got)
	}
	notices, faults, stderr := r.snapshot()
	want := []string{
		"log: one",
		"notice (info): two",
		`view: {"id":"v","key":"","type":"view","view":{"text":"three","type":"text"}}`,
		`notify: {"msg":"four","type":"notify"}`,
		`subscribe: {"events":["five"],"type":"subscribe"}`,
	}
	if !slices.Equal(notices, want) {
		t.Errorf("notices = %q\nwant      %q", notices, want)
	}
	if !slices.Equal(faults, []string{"the backend reported: six"}) {
		t.Errorf("faults = %q", faults)
	}
	if !strings.Contains(stderr, "one\n") {
		t.Errorf("the log line is not in the stderr tail: %q", stderr)
	}
}

func TestACrashMidRequestAnswersTheCallAndEndsTheBackend(t *testing.T) {
	t.Parallel()
	b, r := start(t, nil, 0)
	got := answered(t, b, "crash", `{"code":3}`)
	want := `plugin backend "notes" crashed while running tool "crash": the plugin backend exited (exit status 3); it may have done part of the work, so read the world before acting again`
	if got.GetExitCode() != 1 || got.GetStderr() != want {
		t.Errorf("capture = %v", got)
	}
	awaitDone(t, b)
	if b.Err() == nil || b.Err().Error() != "the plugin backend exited (exit status 3)" {
		t.Errorf("Err = %v", b.Err())
	}
	if notices, _, _ := r.snapshot(); !slices.Contains(notices, "log: about to crash") {
		t.Errorf("the log line before the crash was lost: %q", notices)
	}
	if c, answer := call(t, b, "echo", `{}`); answer || c != nil {
		t.Errorf("a call to an ended backend was answered: %v", c)
	}
}

// A call submitted before the crash and still queued was never sent: it
// is left unanswered, for the mailbox to hand out again.
func TestQueuedCallsAreNotAnsweredWhenTheBackendEnds(t *testing.T) {
	t.Parallel()
	b, _ := start(t, nil, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	crash := b.Submit(ctx, "crash", `{"code":2}`, Hearing{})
	queued := b.Submit(ctx, "echo", `{}`, Hearing{})
	if c, answer := queued.Wait(); answer || c != nil {
		t.Errorf("the queued call was answered: %v", c)
	}
	if c, answer := crash.Wait(); !answer || !strings.Contains(c.GetStderr(), "(exit status 2)") {
		t.Errorf("the crashed call: %v, %v", c, answer)
	}
}

// A cancelled request is cancelled on the wire, its late reply is dropped,
// and the next request goes at once.
func TestCancelSendsCancelDropsTheLateReplyAndFreesTheLine(t *testing.T) {
	t.Parallel()
	b, r := start(t, nil, 0)
	ctx, cancel := context.WithCancel(context.Background())
	hung := b.Submit(ctx, "hang", `{}`, Hearing{})
	next := b.Submit(context.Background(), "text", `{"text":"next"}`, Hearing{})
	testkit.Eventually(t, "the hung request in flight", 10*time.Second, func() bool { return b.InFlight() == 1 })
	cancel()
	if c, answer := hung.Wait(); answer || c != nil {
		t.Errorf("a cancelled call was answered: %v", c)
	}
	if c, answer := next.Wait(); !answer || c.GetStdout() != "next" {
		t.Errorf("the call after the cancelled one: %v", c)
	}
	if got := answered(t, b, "seen", `{}`); got.GetStdout() != `["init","request","cancel","request","request"]` {
		t.Errorf("the backend was sent %s", got.GetStdout())
	}
	notices, _, _ := r.snapshot()
	if !slices.Contains(notices, "dropped the late reply to request 1, which was cancelled") {
		t.Errorf("notices = %q", notices)
	}
}

func TestAReplyToAnotherRequestIsIgnoredWithANotice(t *testing.T) {
	t.Parallel()
	b, r := start(t, nil, 0)
	if got := answered(t, b, "wrongid", `{}`); got.GetStdout() != "yours" {
		t.Errorf("capture = %v", got)
	}
	if notices, _, _ := r.snapshot(); !slices.Contains(notices, "ignored a reply to request 1001, which is not in flight") {
		t.Errorf("notices = %q", notices)
	}
}

func TestOversizedAndMalformedLinesAreFaultsAndTheCallIsStillAnswered(t *testing.T) {
	t.Parallel()
	b, r := start(t, &bridgev1.PluginManifest{MaxLineBytes: 1000}, 0)
	if got := answered(t, b, "big", `{"bytes":5000}`); got.GetStdout() != "after big" {
		t.Errorf("capture after the long line = %v", got)
	}
	if got := answered(t, b, "big", `{"bytes":900}`); got.GetStdout() != "after big" {
		t.Errorf("capture after a line under the bound = %v", got)
	}
	if got := answered(t, b, "garbage", `{}`); got.GetStdout() != "after garbage" {
		t.Errorf("capture after garbage = %v", got)
	}
	notices, faults, _ := r.snapshot()
	want := []string{
		"dropped a 5024-byte line from the backend: lines are bounded to 1000 bytes (max_line_bytes)",
		`a line from the backend is not a JSON object: "this is not json"`,
		`a line from the backend is not a JSON object: "[1,2]"`,
		`a line from the backend has no string "type": "{\"no\":\"type\"}"`,
	}
	if !slices.Equal(faults, want) {
		t.Errorf("faults = %q\nwant     %q", faults, want)
	}
	if len(notices) != 1 || len(notices[0]) != len("log: ")+900 {
		t.Errorf("the line under the bound was not kept whole: %d notices", len(notices))
	}
}

func TestABackendThatWillNotStartFailsItsFirstCall(t *testing.T) {
	t.Parallel()
	b, _ := start(t, &bridgev1.PluginManifest{Command: []string{"/no/such/backend"}}, 0)
	got := answered(t, b, "echo", `{}`)
	if got.GetExitCode() != capture.ExitNotFound ||
		got.GetStderr() != `tool "echo" of "notes" was not run: could not start the plugin backend: fork/exec /no/such/backend: no such file or directory` {
		t.Errorf("capture = %v", got)
	}
	awaitDone(t, b)
	if b.Err() == nil || !strings.HasPrefix(b.Err().Error(), "could not start the plugin backend") {
		t.Errorf("Err = %v", b.Err())
	}
}

func TestCloseStopsACooperativeBackendOnShutdown(t *testing.T) {
	t.Parallel()
	b, _ := start(t, nil, 0)
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	pid := b.PID()
	began := time.Now()
	_ = b.Close()
	took := time.Since(began)
	if syscall.Kill(pid, 0) == nil {
		t.Errorf("process %d is alive after Close", pid)
	}
	if took >= Grace {
		t.Errorf("Close took %v: the backend exits on shutdown, so it should not have waited out the grace", took)
	}
	t.Logf("a backend that obeys shutdown stopped in %v", took)
}

func TestCloseKillsABackendThatIgnoresShutdown(t *testing.T) {
	t.Parallel()
	b, _ := start(t, nil, 0, "-stubborn")
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	pid := b.PID()
	began := time.Now()
	_ = b.Close()
	took := time.Since(began)
	if syscall.Kill(pid, 0) == nil {
		t.Errorf("process %d is alive after Close", pid)
	}
	if took < Grace || took > Grace+2*time.Second {
		t.Errorf("Close took %v; want the grace (%v) and then a kill", took, Grace)
	}
	t.Logf("a backend that ignores shutdown was killed after %v", took)
}

func TestABackendThatClosesItsStdoutIsStopped(t *testing.T) {
	t.Parallel()
	b, r := start(t, &bridgev1.PluginManifest{Command: []string{"/bin/sh", "-c", "exec >&-; sleep 60"}}, 0)
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	awaitDone(t, b)
	if b.Err() == nil || b.Err().Error() != "the plugin backend exited (signal: killed)" {
		t.Errorf("Err = %v", b.Err())
	}
	if _, faults, _ := r.snapshot(); !slices.Contains(faults, "the backend closed its stdout but did not exit; it is stopped") {
		t.Errorf("faults = %q", faults)
	}
}
