package host_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// A real shell tool's '::progress::' lines, run by a host process, become
// the invocation's notes, which its poster reads with Status while the tool
// runs (it waits for a file the test makes once it has read them); the
// capture that follows has the tool's other stderr lines only, and no note
// comes after it. The lines come in a burst, so the earlier ones may be
// replaced by the last, which is always stored because the run goes on.
func TestAToolsProgressLinesReachThePosterThroughTheMailbox(t *testing.T) {
	t.Parallel()
	goFile := filepath.Join(t.TempDir(), "go")
	script := `echo "::progress:: 1/3 first" >&2; echo "a warning" >&2; echo "::progress:: second" >&2; echo "::progress:: 3/3 third" >&2; ` +
		`while [ ! -e ` + goFile + ` ]; do sleep 0.01; done; echo done`
	h := startHosted(t, `[{"name":"steps","description":"","input_schema":{"type":"object"},"command":["sh","-c",`+fmt.Sprintf("%q", script)+`]}]`)
	inv, err := h.mb.Invoke(driver, &mailboxv1.InvokeRequest{Client: "box", Tool: "steps", Input: "{}"})
	if err != nil {
		t.Fatal(err)
	}
	third := func(ns []*mailboxv1.ProgressNote) bool { return len(ns) > 0 && ns[len(ns)-1].GetMessage() == "third" }
	notes, last := testkit.Notes(driver, t, h.mb, inv.GetInvocation(), third)
	if last.GetPhase() != mailboxv1.Phase_PHASE_HANDED_OUT {
		t.Fatalf("Status once the last note is in: %v; want the run still going", last)
	}
	if err := os.WriteFile(goFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	all, last := testkit.Notes(driver, t, h.mb, inv.GetInvocation(), nil)
	c := last.GetCapture()
	if last.GetPhase() != mailboxv1.Phase_PHASE_ANSWERED || c.GetStdout() != "done\n" || c.GetStderr() != "a warning\n" || c.GetExitCode() != 0 {
		t.Fatalf("the last Status: %v; want answered, stdout done, stderr only the warning", last)
	}
	got, want := testkit.NoteTexts(notes), []string{"1/3 first", "2/- second", "3/3 third"}
	if !testkit.Subsequence(got, want) {
		t.Fatalf("notes read: %q; want %q, in order, some perhaps left out", got, want)
	}
	if again := testkit.NoteTexts(all); !slices.Equal(again, got) {
		t.Fatalf("every note once answered: %q; want the ones read while it ran, %q, and no later one", again, got)
	}
}
