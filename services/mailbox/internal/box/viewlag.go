package box

import (
	"sync"
	"time"
)

// viewLag tells a partition's view that stalled from one that is behind:
// this replica's own writes must come back through it. A JetStream
// ordered consumer whose stream lost its quorum, or whose node restarted,
// resumes by itself only after missed heartbeats, and meanwhile waits for
// answers are woken only by their own timeouts (docs/architecture.md).
type viewLag struct {
	mu      sync.Mutex
	written uint64    // the highest stream sequence this replica wrote
	heard   uint64    // the highest its view heard
	behind  time.Time // when the view fell behind a write of this replica; zero when it is not
	moved   time.Time // when the view last heard anything
	missed  bool      // a record read whole was newer than the view
}

// viewStalledAfter is how long the view may hear nothing, while a write
// of this replica or a record read whole shows it behind, before it is
// opened again.
const viewStalledAfter = 1500 * time.Millisecond

func (l *viewLag) wrote(seq uint64, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.written = max(l.written, seq)
	if l.heard < seq && l.behind.IsZero() {
		l.behind = now
	}
}

func (l *viewLag) heardUpTo(seq uint64, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if seq <= l.heard {
		return
	}
	l.heard, l.moved = seq, now
	if l.heard >= l.written {
		l.behind = time.Time{}
	}
}

// readNewer tells the view that a record read whole (after a wait without
// news) was newer than what it heard: a replica that writes nothing still
// finds its view stalled.
func (l *viewLag) readNewer() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.missed = true
}

// stalled reports whether the view is behind and heard nothing for
// viewStalledAfter; one behind but moving is slow, not stalled. The caller
// then opens the view anew, which replays every record as it stands: what
// was written so far counts as heard (a write that expired unheard would
// otherwise be waited for forever).
func (l *viewLag) stalled(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	behind := !l.behind.IsZero() || l.missed
	quiet := now.Sub(l.moved) >= viewStalledAfter && (l.behind.IsZero() || now.Sub(l.behind) >= viewStalledAfter)
	if !behind || !quiet {
		return false
	}
	l.heard, l.behind, l.missed, l.moved = l.written, time.Time{}, false, now
	return true
}
