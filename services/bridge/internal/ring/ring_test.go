package ring

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestTail(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		maxLines, maxB int
		writes         []string
		want           string
	}{
		{"a line is kept whole", 4, 100, []string{"hello\n"}, "hello"},
		{"an unfinished line is shown", 4, 100, []string{"hel", "lo"}, "hello"},
		{"a line split across writes is one line", 4, 100, []string{"he", "llo\nwor", "ld\n"}, "hello\nworld"},
		{"only the newest lines are kept", 2, 100, []string{"a\nb\nc\nd\n"}, "c\nd"},
		{"the byte bound drops the oldest lines", 10, 6, []string{"aaa\nbbb\nccc\n"}, "ccc"},
		{"an overlong unfinished line keeps its end", 10, 4, []string{"abcdefgh"}, "efgh"},
		{"empty lines count as lines", 3, 100, []string{"\n\nx\n"}, "\n\nx"},
		{"a cut character becomes U+FFFD", 10, 3, []string{"x€é"}, "\uFFFDé"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tail := NewTail(tt.maxLines, tt.maxB)
			for _, w := range tt.writes {
				if n, err := tail.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", w, n, err)
				}
			}
			if got := tail.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTailStaysBoundedUnderConcurrentWriters(t *testing.T) {
	t.Parallel()
	tail := NewTail(64, 16<<10)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				fmt.Fprintf(tail, "writer %d line %d %s\n", w, i, strings.Repeat("x", i%50))
			}
		}()
	}
	wg.Wait()
	got := tail.String()
	if n := strings.Count(got, "\n") + 1; n > 64 {
		t.Errorf("kept %d lines, want at most 64", n)
	}
	if len(got) > 16<<10 {
		t.Errorf("kept %d bytes, want at most %d", len(got), 16<<10)
	}
	tail.mu.Lock()
	defer tail.mu.Unlock()
	if tail.size > 16<<10 {
		t.Errorf("accounted size %d exceeds the bound", tail.size)
	}
}

func TestLines(t *testing.T) {
	t.Parallel()
	l := NewLines(3, 10)
	if l.Last() != "" || len(l.All()) != 0 {
		t.Fatal("a new list is not empty")
	}
	for _, s := range []string{"one", "two", "three", "four"} {
		l.Add(s)
	}
	if got := strings.Join(l.All(), ","); got != "two,three,four" {
		t.Errorf("All() = %q, want the newest three", got)
	}
	if l.Last() != "four" {
		t.Errorf("Last() = %q, want four", l.Last())
	}
	l.Add(strings.Repeat("y", 20))
	if got := l.Last(); !strings.HasPrefix(got, strings.Repeat("y", 10)+"\n[truncated: 10 more") {
		t.Errorf("a long entry was not cut with the marker: %q", got)
	}
	all := l.All()
	all[0] = "changed"
	if l.All()[0] == "changed" {
		t.Error("All() returned the list's own storage")
	}
}
