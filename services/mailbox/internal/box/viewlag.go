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
	since   time.Time // when the oldest write not yet heard was made; zero when none
}

// viewStalledAfter is how long a write of this replica may go unheard by
// its view before the view is opened again.
const viewStalledAfter = 3 * time.Second

func (l *viewLag) wrote(seq uint64, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.written = max(l.written, seq)
	if l.heard < seq && l.since.IsZero() {
		l.since = now
	}
}

func (l *viewLag) heardUpTo(seq uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.heard = max(l.heard, seq)
	if l.heard >= l.written {
		l.since = time.Time{}
	}
}

// stalled reports whether a write has gone unheard for viewStalledAfter.
// The caller then opens the view anew, which replays every record as it
// stands: the writes so far count as heard (one that expired unheard
// would otherwise be waited for forever).
func (l *viewLag) stalled(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.since.IsZero() || now.Sub(l.since) < viewStalledAfter {
		return false
	}
	l.heard, l.since = l.written, time.Time{}
	return true
}
