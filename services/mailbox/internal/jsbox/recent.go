package jsbox

import (
	"sync"
	"time"
)

// recentAnswers keeps, for a short while, the answers this replica heard
// announced while no call of its own waited for them. A driver that
// invokes and then collects usually asks just after its host answered; with
// the answer at hand, its collection takes the slot with one write (a purge
// at the announced revision) instead of reading it first: one NATS exchange
// instead of two on that path.
//
// Nothing here is trusted beyond the hint it is: the purge decides. The
// slot is taken only if it is still at the revision the answer left — so
// still answered, never collected, cancelled or expired since, and posted
// by the poster the answer names, which the collection is checked against.
// A stale entry costs the collection a refused purge and then the read it
// would have made anyway.
type recentAnswers struct {
	mu    sync.Mutex
	byID  map[string]recentAnswer
	order []recentKey // oldest first, from head
	head  int
	bytes int
	seq   uint64
}

type recentAnswer struct {
	answer
	at  time.Time
	seq uint64 // which put made it: order's stale keys are skipped
}

type recentKey struct {
	id  string
	seq uint64
}

// Bounds of what a replica keeps: a collection that comes later than
// recentFor after its answer reads the slot as before. Every replica hears
// every announced answer (each at most maxAnnounced bytes), so these bound
// the memory of each replica whatever the traffic.
const (
	recentFor      = 30 * time.Second
	recentMax      = 8192
	recentMaxBytes = 4 << 20
)

func newRecentAnswers() *recentAnswers {
	return &recentAnswers{byID: map[string]recentAnswer{}}
}

// heard records the announcement data of id's answer: an answer naming its
// poster is kept, anything else (a cancel's wake-up, a capture too large
// to announce, a replica that names no poster) forgets what was kept.
func (r *recentAnswers) heard(id string, data []byte) {
	a, ok := decodeAnswer(data)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.drop(id)
	if !ok || a.Poster == "" {
		return
	}
	now := time.Now()
	r.seq++
	r.byID[id] = recentAnswer{answer: a, at: now, seq: r.seq}
	r.order = append(r.order, recentKey{id: id, seq: r.seq})
	r.bytes += size(id, a)
	r.evict(now)
}

// take returns the answer kept for id when caller posted it, and forgets
// it; it keeps an answer someone else asked for.
func (r *recentAnswers) take(id, caller string) (answer, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.byID[id]
	if !ok || e.Poster != caller || time.Since(e.at) > recentFor {
		return answer{}, false
	}
	r.drop(id)
	return e.answer, true
}

// drop forgets id's answer; its key in order is skipped when reached.
func (r *recentAnswers) drop(id string) {
	if e, ok := r.byID[id]; ok {
		delete(r.byID, id)
		r.bytes -= size(id, e.answer)
	}
}

// evict forgets the oldest answers while too many are kept, or too many
// bytes, or they are older than recentFor. Keys of answers taken since are
// skipped as they reach the front; so that they cannot pile up behind a
// fresh one, order itself holds at most 4×recentMax keys.
func (r *recentAnswers) evict(now time.Time) {
	for r.head < len(r.order) {
		k := r.order[r.head]
		e, live := r.byID[k.id]
		live = live && e.seq == k.seq
		if live && len(r.byID) <= recentMax && r.bytes <= recentMaxBytes && now.Sub(e.at) <= recentFor &&
			len(r.order)-r.head <= 4*recentMax {
			break
		}
		if live {
			r.drop(k.id)
		}
		r.order[r.head] = recentKey{}
		r.head++
	}
	// Reuse the slice's front once most of it is behind head.
	if r.head > 1024 && r.head > len(r.order)/2 {
		n := copy(r.order, r.order[r.head:])
		clear(r.order[n:])
		r.order, r.head = r.order[:n], 0
	}
}

// size is what an answer kept for id holds in memory, near enough.
func size(id string, a answer) int {
	return len(id) + len(a.Poster) + len(a.Capture.Stdout) + len(a.Capture.Stderr) + 64
}
