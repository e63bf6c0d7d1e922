package testkit

import (
	"errors"
	"slices"
	"testing"
)

func TestSessionEndsAtFatalAndRunsItsCleanupsLastFirst(t *testing.T) {
	t.Parallel()
	var order []string
	var failedInCleanup bool
	err := Session(func(s TB) error {
		s.Cleanup(func() { order = append(order, "first") })
		s.Cleanup(func() { order = append(order, "second"); failedInCleanup = s.Failed() })
		s.Fatalf("the registry at %s never served", "127.0.0.1:1")
		order = append(order, "after Fatal")
		return nil
	})
	if err == nil || err.Error() != "the registry at 127.0.0.1:1 never served" {
		t.Fatalf("Session = %v, want the Fatalf sentence", err)
	}
	if !slices.Equal(order, []string{"second", "first"}) || !failedInCleanup {
		t.Fatalf("ran %q (failed in cleanup: %v); want the cleanups last first, on a failed session, and nothing after Fatal", order, failedInCleanup)
	}
}

func TestSessionReturnsWhatFReturns(t *testing.T) {
	t.Parallel()
	want := errors.New("a step failed")
	var failed bool
	err := Session(func(s TB) error {
		s.Cleanup(func() { failed = s.Failed() })
		return want
	})
	if !errors.Is(err, want) || !failed {
		t.Fatalf("Session = %v (failed in cleanup: %v), want %v on a failed session", err, failed, want)
	}
	if err := Session(func(TB) error { return nil }); err != nil {
		t.Fatalf("a session that returns nil = %v", err)
	}
}
