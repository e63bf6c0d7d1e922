// Package budget is the mailbox's byte budgets (docs/design.md §3,
// docs/security.md): the bytes an invocation holds — its input, tool and
// cwd, then its capture while it waits to be collected — count from Invoke
// until the capture is collected, the invocation is cancelled, or it
// expires, whether it is queued, handed to a host or answered; so do its
// host's progress notes. Three
// budgets bound them: the whole mailbox's, each poster's and each
// client's. A post past any of them is refused with a sentence naming the
// budget, so one flooding driver (or one host that stopped answering) does
// not starve the others.
//
// The ledger is kept by the service layer, the same for both stores, so
// it is per replica: with several replicas on JetStream each bounds what
// was posted through it (see Ledger.Forget for how releases travel).
package budget

import (
	"container/list"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Limits are the budgets, in bytes; 0 is no bound.
type Limits struct {
	// Total bounds every invocation and capture held together.
	Total int64
	// PerPoster bounds what one driver's invocations hold.
	PerPoster int64
	// PerClient bounds what the invocations addressed to one client hold.
	PerClient int64
	// TTL is how long an invocation is held uncollected: its bytes are
	// released then even if no collection says so.
	TTL time.Duration
}

// Ledger counts the bytes held, by invocation.
type Ledger struct {
	lim Limits
	now func() time.Time

	mu     sync.Mutex
	byID   map[string]*entry
	order  list.List // of *entry, by post time: expiry order (TTL is constant)
	total  int64
	poster map[string]int64
	client map[string]int64
}

type entry struct {
	id, poster, client string
	bytes              int64 // input, tool and cwd
	capture            int64 // the capture's stdout and stderr, once answered
	notes              int64 // its host's progress notes, as the slot keeps them
	expires            time.Time
	at                 *list.Element
}

// New returns an empty ledger; now is the clock (time.Now when nil).
func New(lim Limits, now func() time.Time) *Ledger {
	if now == nil {
		now = time.Now
	}
	return &Ledger{lim: lim, now: now, byID: map[string]*entry{}, poster: map[string]int64{}, client: map[string]int64{}}
}

// Reserve counts n bytes of a new invocation, or refuses it with the
// sentence of the first budget it would pass.
func (l *Ledger) Reserve(id, poster, client string, n int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expire()
	switch {
	case over(l.total, n, l.lim.Total):
		return status.Errorf(codes.ResourceExhausted,
			"the mailbox holds %d bytes of invocations and uncollected captures, and this invocation's %d more would pass its budget of %d (--max-held-bytes); collect captures, cancel what is not needed, or wait for hosts to answer",
			l.total, n, l.lim.Total)
	case over(l.poster[poster], n, l.lim.PerPoster):
		return status.Errorf(codes.ResourceExhausted,
			"driver %q holds %d bytes of invocations and uncollected captures in this mailbox, and this invocation's %d more would pass the budget of %d per poster (--max-poster-bytes); collect or cancel what it posted first",
			poster, l.poster[poster], n, l.lim.PerPoster)
	case over(l.client[client], n, l.lim.PerClient):
		return status.Errorf(codes.ResourceExhausted,
			"client %q has %d bytes of invocations and uncollected captures waiting in this mailbox, and this invocation's %d more would pass the budget of %d per client (--max-client-bytes); it is not answering (or its posters not collecting) fast enough",
			client, l.client[client], n, l.lim.PerClient)
	}
	e := &entry{id: id, poster: poster, client: client, expires: l.now().Add(l.lim.TTL)}
	l.byID[id] = e
	e.at = l.order.PushBack(e)
	e.bytes = n
	l.add(e, n)
	return nil
}

func over(held, n, limit int64) bool { return limit > 0 && held+n > limit }

// Captured counts the capture of id, n bytes, while it waits to be
// collected; said twice, it counts once. A capture is never refused for
// the budget (the host did the work); it only leaves less room for posts.
// counted reports whether this ledger counts id at all.
func (l *Ledger) Captured(id string, n int64) (counted bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.byID[id]
	if e != nil {
		l.add(e, n-e.capture)
		e.capture = n
	}
	return e != nil
}

// Noted counts the progress notes of id, n bytes in all as its slot keeps
// them now (a note more, the oldest dropped past the latest 16); said
// twice, it counts once. Like a capture, a note is never refused for the
// budget: it only leaves less room for posts. counted is as Captured's.
func (l *Ledger) Noted(id string, n int64) (counted bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.byID[id]
	if e != nil {
		l.add(e, n-e.notes)
		e.notes = n
	}
	return e != nil
}

// Release gives back the bytes of id, when poster posted it: collected,
// cancelled, or found gone by its poster. Someone else's release is
// ignored, so a stray handle frees nothing. counted reports whether this
// ledger counts id at all.
func (l *Ledger) Release(id, poster string) (counted bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.byID[id]
	if e != nil && e.poster == poster {
		l.drop(e)
	}
	return e != nil
}

// Forget gives back the bytes of id, whoever asks: another replica
// announced that it is collected or cancelled there.
func (l *Ledger) Forget(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e := l.byID[id]; e != nil {
		l.drop(e)
	}
}

// Held returns the bytes held in all, by poster and by client, for tests
// and metrics.
func (l *Ledger) Held(poster, client string) (total, byPoster, byClient int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expire()
	return l.total, l.poster[poster], l.client[client]
}

// add counts n more (or fewer) bytes of e.
func (l *Ledger) add(e *entry, n int64) {
	l.total += n
	l.poster[e.poster] += n
	l.client[e.client] += n
}

func (l *Ledger) drop(e *entry) {
	delete(l.byID, e.id)
	l.order.Remove(e.at)
	n := e.bytes + e.capture + e.notes
	l.total -= n
	if l.poster[e.poster] -= n; l.poster[e.poster] == 0 {
		delete(l.poster, e.poster)
	}
	if l.client[e.client] -= n; l.client[e.client] == 0 {
		delete(l.client, e.client)
	}
}

// expire releases what outlived the TTL. Called with the ledger locked.
func (l *Ledger) expire() {
	now := l.now()
	for f := l.order.Front(); f != nil; f = l.order.Front() {
		e := f.Value.(*entry)
		if now.Before(e.expires) {
			return
		}
		l.drop(e)
	}
}

// String describes the limits, for the log.
func (lim Limits) String() string {
	return fmt.Sprintf("total %d, per poster %d, per client %d bytes", lim.Total, lim.PerPoster, lim.PerClient)
}
