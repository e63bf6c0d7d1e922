package watch

import (
	"slices"
	"sync"

	"google.golang.org/protobuf/proto"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
)

// Watcher is one Watch stream's subscription.
type Watcher struct {
	c      chan *mailboxv1.InvocationState
	ended  chan struct{}
	once   sync.Once
	poster string // "" sees every invocation
}

// C delivers the changes the watcher may see, in order.
func (w *Watcher) C() <-chan *mailboxv1.InvocationState { return w.c }

// Ended is closed when the watcher fell behind (or the tracker closed).
func (w *Watcher) Ended() <-chan struct{} { return w.ended }

func (w *Watcher) end() { w.once.Do(func() { close(w.ended) }) }

// sees says whether the watcher may see st: everything, or only what its
// poster posted (anyone else's invocation is absent, as for Capture).
func (w *Watcher) sees(st *mailboxv1.InvocationState) bool {
	return w.poster == "" || st.GetPoster() == w.poster
}

// Watch subscribes a watcher that sees every invocation (all) or only
// poster's, and returns it with its snapshot: what it may see of the
// invocations in flight, oldest post first, then of the last finished.
func (t *Tracker) Watch(all bool, poster string) (*Watcher, []*mailboxv1.InvocationState) {
	w := &Watcher{c: make(chan *mailboxv1.InvocationState, MaxBuffer), ended: make(chan struct{})}
	if !all {
		w.poster = poster
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var live []*mailboxv1.InvocationState
	for _, st := range t.live {
		if w.sees(st) {
			live = append(live, proto.Clone(st).(*mailboxv1.InvocationState))
		}
	}
	slices.SortFunc(live, func(a, b *mailboxv1.InvocationState) int {
		return a.GetPosted().AsTime().Compare(b.GetPosted().AsTime())
	})
	for _, st := range t.done {
		if w.sees(st) {
			live = append(live, proto.Clone(st).(*mailboxv1.InvocationState))
		}
	}
	t.watchers[w] = struct{}{}
	return w, live
}

// Unwatch ends a watcher's subscription.
func (t *Tracker) Unwatch(w *Watcher) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.watchers, w)
	w.end()
}
