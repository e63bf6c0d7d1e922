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
	since   time.Time // when the view last fell behind or moved on while behind; zero when it is not behind
}

// viewStalledAfter is how long the view may hear nothing while a write of
// this replica waits to be heard before it is opened again.
const viewStalledAfter = 3 * time.Second

func (l *viewLag) wrote(seq uint64, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.written = max(l.written, seq)
	if l.heard < seq && l.since.IsZero() {
		l.since = now
	}
}

func (l *viewLag) heardUpTo(seq uint64, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if seq <= l.heard {
		return
	}
	l.heard = seq
	if l.heard >= l.written {
		l.since = time.Time{}
	} else {
		l.since = now // behind, but moving: slow, not stalled
	}
}

// stalled reports whether the view heard nothing for viewStalledAfter
// while a write waited. The caller then opens the view anew, which
// replays every record as it stands: the writes so far count as heard (one
// that expired unheard would otherwise be waited for forever).
func (l *viewLag) stalled(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.since.IsZero() || now.Sub(l.since) < viewStalledAfter {
		return false
	}
	l.heard, l.since = l.written, time.Time{}
	return true
}
