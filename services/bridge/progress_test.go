package bridge

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// The conformance server's progress tool, called through the mailbox, has
// its notifications/progress stored on the invocation: its poster reads
// them with Status, in the order sent, and then the answer. A note that
// arrives while another waits to be sent replaces it, and one still waiting
// when the call ends is dropped, so the notes read are the server's three
// with some perhaps left out; its 50 ms between notes leave the mailbox
// ample time to store at least one.
func TestAnUpstreamsProgressReachesThePosterThroughTheMailbox(t *testing.T) {
	t.Parallel()
	s := newSuite(t, timing{})
	if st := s.mount(t, "conf", stdioServer(testkit.Tool(t, "everything-server"))); st.GetState() != bridgev1.State_STATE_RUNNING {
		t.Fatalf("state after Mount = %v (last fault %q)", st.GetState(), st.GetLastFault())
	}
	inv, err := s.mb.Invoke(driver, &mailboxv1.InvokeRequest{Client: "conf", Tool: "test_tool_with_progress", Input: `{}`})
	if err != nil {
		t.Fatal(err)
	}
	notes, last := testkit.Notes(driver, t, s.mb, inv.GetInvocation(), nil)
	if last.GetPhase() != mailboxv1.Phase_PHASE_ANSWERED || last.GetCapture().GetStdout() != inv.GetInvocation() {
		t.Fatalf("the last Status: %v; want answered with the invocation id (the progress token) as stdout", last)
	}
	got := testkit.NoteTexts(notes)
	want := []string{"0/100 Completed step 0 of 100", "50/100 Completed step 50 of 100", "100/100 Completed step 100 of 100"}
	if len(got) == 0 || !testkit.Subsequence(got, want) {
		t.Fatalf("notes read: %q; want %q, in order, some perhaps left out", got, want)
	}
}

// A plugin's notices naming its request become the invocation's notes while
// the call runs (the backend waits for a file the test makes once it has
// read them), and the answer follows, with no note after it. The notices
// come in a burst, so the earlier ones may be replaced by the last, which
// is always stored because the call goes on after it.
func TestAPluginsProgressNoticesReachThePosterThroughTheMailbox(t *testing.T) {
	t.Parallel()
	s := newSuite(t, timing{})
	s.mount(t, "fake", pluginServer(fake(t)))
	goFile := filepath.Join(t.TempDir(), "go")
	inv, err := s.mb.Invoke(driver, &mailboxv1.InvokeRequest{Client: "fake", Tool: "progress", Input: fmt.Sprintf(`{"text":%q}`, goFile)})
	if err != nil {
		t.Fatal(err)
	}
	third := func(ns []*mailboxv1.ProgressNote) bool { return len(ns) > 0 && ns[len(ns)-1].GetMessage() == "third" }
	notes, last := testkit.Notes(driver, t, s.mb, inv.GetInvocation(), third)
	if last.GetPhase() != mailboxv1.Phase_PHASE_HANDED_OUT {
		t.Fatalf("Status once the last note is in: %v; want the call still running", last)
	}
	if err := os.WriteFile(goFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	all, last := testkit.Notes(driver, t, s.mb, inv.GetInvocation(), nil)
	if last.GetPhase() != mailboxv1.Phase_PHASE_ANSWERED || last.GetCapture().GetStdout() != "done" {
		t.Fatalf("the last Status: %v; want answered done", last)
	}
	got, again := testkit.NoteTexts(notes), testkit.NoteTexts(all)
	if !slices.Equal(again, got) {
		t.Fatalf("every note once answered: %q; want the ones read while it ran, %q, and no later one", again, got)
	}
	want := []string{"1/4 first", "2/- a step", "3.5/4 third"}
	if !testkit.Subsequence(got, want) {
		t.Fatalf("notes read: %q; want %q, in order, some perhaps left out", got, want)
	}
}
