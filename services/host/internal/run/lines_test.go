package run

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-run/switchboard/kit/suite/follower"
)

// Marked lines become notes and leave stderr, however the output is cut
// into writes; everything else passes through as written.
func TestProgressLinesSplitStderr(t *testing.T) {
	t.Parallel()
	in := "plain one\n" +
		"::progress:: 3/10 copying files\n" +
		"  ::progress:: indented, so plain\n" +
		"::progress:: 4 half way\r\n" +
		"::prog but not quite\n" +
		"::progress::\n" +
		"::progress:: writing the index\n" +
		"::progress:: 1e3 is a message, not a number\n" +
		"::progress:: 2.5/0 a total of 0 is none\n" +
		"\n" +
		"::progress:: " + strings.Repeat("x", MaxProgressLine) + "\n" +
		"last plain\n" +
		"::progress:: 9/9 done, no newline"
	want := []follower.Note{
		{Progress: 3, Total: 10, Message: "copying files"},
		{Progress: 4, Message: "half way"},
		{Step: true},
		{Step: true, Message: "writing the index"},
		{Step: true, Message: "1e3 is a message, not a number"},
		{Progress: 2.5, Message: "a total of 0 is none"},
		{Step: true, Message: strings.Repeat("x", MaxProgressLine-len(Marker)-1)},
		{Progress: 9, Total: 9, Message: "done, no newline"},
	}
	wantErr := "plain one\n  ::progress:: indented, so plain\n::prog but not quite\n\nlast plain\n"
	for _, size := range []int{1, 3, 7, len(Marker), 100, len(in)} {
		var notes []follower.Note
		var out strings.Builder
		w := &markedLines{out: &out, report: func(n follower.Note) { notes = append(notes, n) }}
		for s := in; s != ""; {
			k := min(size, len(s))
			if n, err := w.Write([]byte(s[:k])); n != k || err != nil {
				t.Fatalf("Write of %d bytes: %d, %v", k, n, err)
			}
			s = s[k:]
		}
		w.flush()
		if !slices.Equal(notes, want) {
			t.Errorf("writes of %d bytes: notes %+v; want %+v", size, notes, want)
		}
		if out.String() != wantErr {
			t.Errorf("writes of %d bytes: stderr %q; want %q", size, out.String(), wantErr)
		}
	}
	// A line that might have been marked, cut off by the end, is stderr.
	var out strings.Builder
	w := &markedLines{out: &out, report: func(n follower.Note) { t.Errorf("reported %+v", n) }}
	_, _ = w.Write([]byte("ok\n::prog"))
	w.flush()
	if out.String() != "ok\n::prog" {
		t.Errorf("stderr %q; want the cut-off start kept", out.String())
	}
}

// A real shell tool's marked lines reach the run's progress function in
// order, and its stderr holds only its other lines.
func TestAToolsProgressLinesAreReported(t *testing.T) {
	t.Parallel()
	script := `echo "::progress:: 1/3 first" >&2; echo "a warning" >&2; echo "::progress:: second" >&2; echo out; echo "::progress:: 3/3" >&2`
	var notes []follower.Note
	c := Run(context.Background(), tool(t, false, "sh", "-c", script),
		Invocation{Tool: "t", Input: "{}", Progress: func(n follower.Note) { notes = append(notes, n) }}, lim)
	if c.GetExitCode() != 0 || c.GetStdout() != "out\n" || c.GetStderr() != "a warning\n" {
		t.Fatalf("capture %v; want exit 0, stdout out, stderr only the warning", c)
	}
	want := []follower.Note{{Progress: 1, Total: 3, Message: "first"}, {Step: true, Message: "second"}, {Progress: 3, Total: 3}}
	if !slices.Equal(notes, want) {
		t.Errorf("notes %+v; want %+v", notes, want)
	}
	// Without a progress function the marked lines still stay out of stderr.
	c = Run(context.Background(), tool(t, false, "sh", "-c", script), Invocation{Tool: "t", Input: "{}"}, lim)
	if c.GetStderr() != "a warning\n" {
		t.Errorf("stderr %q without a progress function; want only the warning", c.GetStderr())
	}
}

// Ask lines go to ask, whole, however the output is cut into writes; a
// line that only starts like one is stderr.
func TestAskLinesLeaveStderr(t *testing.T) {
	t.Parallel()
	in := "::ask:: {\"key\":\"a\"}\n::as if\n::ask::{}\r\n::progress:: 1 mixed in\n::ask:: " + strings.Repeat("x", MaxAskLine) + "\nend"
	for _, size := range []int{1, 2, 5, len(AskMarker), 64, len(in)} {
		var asks []string
		var out strings.Builder
		w := &markedLines{out: &out, report: func(follower.Note) {}, ask: func(b []byte) { asks = append(asks, string(b)) }}
		for s := in; s != ""; s = s[min(size, len(s)):] {
			_, _ = w.Write([]byte(s[:min(size, len(s))]))
		}
		w.flush()
		if len(asks) != 3 || asks[0] != ` {"key":"a"}` || asks[1] != "{}" || len(asks[2]) != MaxAskLine-len(AskMarker) {
			t.Errorf("writes of %d bytes: asks %.60q; want the three ask lines, the last cut at the bound", size, asks)
		}
		if out.String() != "::as if\nend" {
			t.Errorf("writes of %d bytes: stderr %q", size, out.String())
		}
	}
}
