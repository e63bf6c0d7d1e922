// Package ring holds the bridge's bounded records: the tail of a child
// process's stderr, and short lists of recent faults and notices. Each keeps
// the newest entries and forgets the oldest, so a chatty or crash-looping
// server can never grow the bridge's memory.
package ring

import (
	"bytes"
	"strings"
	"sync"

	"github.com/switchboard-run/switchboard/kit/suite/capture"
)

// Tail is an io.Writer that keeps the last lines written to it, bounded both
// in lines and in bytes. It is safe for concurrent use.
type Tail struct {
	maxLines, maxBytes int

	mu      sync.Mutex
	lines   [][]byte // complete lines, oldest first, without their newline
	partial []byte   // the unfinished last line
	size    int      // bytes shown: lines with their newlines, and partial
}

// NewTail returns a tail keeping at most maxLines lines and maxBytes bytes.
func NewTail(maxLines, maxBytes int) *Tail {
	return &Tail{maxLines: maxLines, maxBytes: maxBytes}
}

// Write records p. It never fails: stderr is logs, and a log that cannot be
// kept is dropped rather than allowed to block the process writing it.
func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			t.partial = append(t.partial, p...)
			t.size += len(p)
			break
		}
		line := append(t.partial, p[:i]...)
		t.size += i + 1 // the newline is shown between lines, so it counts
		t.partial = nil
		t.lines = append(t.lines, line)
		p = p[i+1:]
	}
	t.trim()
	return n, nil
}

// trim drops the oldest lines past either bound, and cuts the front off an
// unfinished line that alone exceeds the byte bound.
func (t *Tail) trim() {
	for len(t.lines) > 0 && (len(t.lines) > t.maxLines || t.size > t.maxBytes) {
		t.size -= len(t.lines[0]) + 1
		t.lines[0] = nil
		t.lines = t.lines[1:]
	}
	if over := len(t.partial) - t.maxBytes; over > 0 {
		t.partial = append([]byte(nil), t.partial[over:]...)
		t.size -= over
	}
}

// String returns the kept lines joined with newlines, as valid UTF-8 (a cut
// may have split a character; it becomes U+FFFD).
func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var b bytes.Buffer
	for i, l := range t.lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.Write(l)
	}
	if len(t.partial) > 0 {
		if len(t.lines) > 0 {
			b.WriteByte('\n')
		}
		b.Write(t.partial)
	}
	return capture.Text(b.Bytes())
}

// Lines is a bounded list of short texts, oldest first. It is safe for
// concurrent use.
type Lines struct {
	max, maxChars int

	mu    sync.Mutex
	items []string
}

// NewLines returns a list keeping the newest max entries, each cut to
// maxChars characters.
func NewLines(max, maxChars int) *Lines { return &Lines{max: max, maxChars: maxChars} }

// Add appends s, forgetting the oldest entry when the list is full.
func (l *Lines) Add(s string) {
	s = capture.Cap(strings.ToValidUTF8(s, "\uFFFD"), l.maxChars)
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.items) == l.max {
		copy(l.items, l.items[1:])
		l.items = l.items[:l.max-1]
	}
	l.items = append(l.items, s)
}

// All returns a copy of the entries, oldest first.
func (l *Lines) All() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.items...)
}

// Last returns the newest entry, or "".
func (l *Lines) Last() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.items) == 0 {
		return ""
	}
	return l.items[len(l.items)-1]
}
