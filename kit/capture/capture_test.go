package capture

import (
	"strings"
	"testing"
)

func TestCapCutsAtRunesAndSaysSo(t *testing.T) {
	t.Parallel()
	if got := Cap("héllo", 10); got != "héllo" {
		t.Fatalf("short text changed: %q", got)
	}
	got := Cap("héllo wörld", 5)
	if !strings.HasPrefix(got, "héllo\n[truncated: 6 more characters") {
		t.Fatalf("Cap = %q", got)
	}
	if got := Cap(strings.Repeat("x", 10), 0); len(got) != 10 {
		t.Fatal("limit 0 should not cut")
	}
}

func TestTextReplacesInvalidUTF8(t *testing.T) {
	t.Parallel()
	if got := Text([]byte{'o', 'k', 0xff, 0xfe}); got != "ok\uFFFD" {
		t.Fatalf("Text = %q", got)
	}
}

func TestNewSetsEveryField(t *testing.T) {
	t.Parallel()
	c := New("", "", 0)
	if c.Stdout == nil || c.Stderr == nil || c.ExitCode == nil {
		t.Fatalf("a zero field was left absent: %v", c)
	}
}
