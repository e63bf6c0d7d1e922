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
	"github.com/switchboard-run/switchboard/kit/suite/identity"
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

// Scope is what a watcher may see (docs/design.md §4). The publisher reads
// and changes it under its own lock, the one it publishes under.
type Scope struct {
	// Caller is who opened the watch.
	Caller identity.Identity
	// Sees is the workspaces the caller may see: a client is shown while it
	// belongs to one of them (every client, when they are all).
	Sees identity.Workspaces
	// Grants says the watcher is shown grant records: admins and services
	// watching everything.
	Grants bool
}

// Watcher is one watch stream's queue.
type Watcher struct {
	// Workspace limits the watcher to one workspace; "" is everything.
	Workspace string
	// Scope is what the watcher may see.
	Scope Scope

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
func (h *Hub) Subscribe(workspace string, scope Scope) *Watcher {
	w := &Watcher{
		Workspace: workspace,
		Scope:     scope,
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

// Publish queues ev for every watcher to accepts. It never blocks on a
// watcher.
func (h *Hub) Publish(ev *Event, to func(*Watcher) bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for w := range h.watchers {
		if to(w) {
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
	h.LoseIf(func(*Watcher) bool { return true }, reason)
}

// LoseIf marks the watchers which accepts lost with reason: for when what
// they may see changed (a grant), so their next snapshot is taken anew.
func (h *Hub) LoseIf(which func(*Watcher) bool, reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for w := range h.watchers {
		if which(w) {
			w.lose(reason)
		}
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
