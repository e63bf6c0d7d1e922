// Package watch fans the registry's changes out to its watchers.
//
// Publishing never blocks: each watcher has a bounded buffer, and a watcher
// whose buffer overflows loses the buffer and is marked lost, so that its
// stream tells the watcher to resync and sends a fresh snapshot. Nothing is
// dropped without the watcher being told.
package watch

import (
	"fmt"
	"sync"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
)

// Event is one change as a watch stream sends it.
type Event = registryv1.WatchToolsResponse

// Hub holds the watchers and publishes to them.
type Hub struct {
	limit int

	mu       sync.Mutex
	watchers map[*Watcher]struct{}
	closed   bool
}

// NewHub returns a hub whose watchers may each lag limit events.
func NewHub(limit int) *Hub {
	return &Hub{limit: limit, watchers: map[*Watcher]struct{}{}}
}

// Watcher is one watch stream's queue.
type Watcher struct {
	// Workspace limits the watcher to one workspace; "" is everything.
	Workspace string

	limit int
	ready chan struct{} // holds a token while there is something to take
	done  chan struct{} // closed when the hub closes

	mu   sync.Mutex
	buf  []*Event
	lost string // why the buffer was dropped; "" while it is whole
}

// Subscribe adds a watcher. The caller takes its snapshot in the same
// critical section as Subscribe and its Publish calls, so the snapshot and
// the live events that follow meet without a gap or an overlap.
func (h *Hub) Subscribe(workspace string) *Watcher {
	w := &Watcher{
		Workspace: workspace,
		limit:     h.limit,
		ready:     make(chan struct{}, 1),
		done:      make(chan struct{}),
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		close(w.done)
		return w
	}
	h.watchers[w] = struct{}{}
	return w
}

// Unsubscribe removes w; its stream has ended.
func (h *Hub) Unsubscribe(w *Watcher) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.watchers, w)
}

// Publish queues ev for every watcher whose workspace to accepts (to("")
// asks about the watchers of everything). It never blocks on a watcher.
func (h *Hub) Publish(ev *Event, to func(workspace string) bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for w := range h.watchers {
		if to(w.Workspace) {
			w.push(ev)
		}
	}
}

// Close ends every watcher (the server is draining) and refuses new ones.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.closed = true
	for w := range h.watchers {
		close(w.done)
		delete(h.watchers, w)
	}
}

// Len is how many watchers are subscribed.
func (h *Hub) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.watchers)
}

func (w *Watcher) push(ev *Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.lost != "" {
		return // the coming snapshot covers it
	}
	if len(w.buf) >= w.limit {
		w.buf = nil
		w.lost = fmt.Sprintf("this watcher fell more than %d events behind; its buffer was dropped", w.limit)
	} else {
		w.buf = append(w.buf, ev)
	}
	select {
	case w.ready <- struct{}{}:
	default:
	}
}

// Ready is signalled when there may be something to Take.
func (w *Watcher) Ready() <-chan struct{} { return w.ready }

// Done is closed when the hub closes.
func (w *Watcher) Done() <-chan struct{} { return w.done }

// Take returns the events queued since the last Take, or, when the buffer
// overflowed, the reason it was dropped. A lost watcher stays lost, queuing
// nothing, until Reset.
func (w *Watcher) Take() (events []*Event, lost string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.lost != "" {
		return nil, w.lost
	}
	events, w.buf = w.buf, nil
	return events, ""
}

// Reset empties the buffer and clears the lost mark. Call it in the same
// critical section as the fresh snapshot it goes with.
func (w *Watcher) Reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf, w.lost = nil, ""
}

// LoseAll marks every watcher lost with reason: their streams send resync
// and a fresh snapshot. For when the state they follow was rebuilt.
func (h *Hub) LoseAll(reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for w := range h.watchers {
		w.lose(reason)
	}
}

func (w *Watcher) lose(reason string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf, w.lost = nil, reason
	select {
	case w.ready <- struct{}{}:
	default:
	}
}
