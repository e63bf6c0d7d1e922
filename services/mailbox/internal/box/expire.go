package box

import (
	"context"
	"time"
)

// Slots in memory expire TTL after their post, collected or not: a sweeper
// armed for the oldest slot's expiry (the expiry list is in expiry order,
// TTL being constant). Records expire in NATS by their own TTL.

// armSweep arms the sweeper for the oldest slot. Called locked.
func (b *Box) armSweep() {
	if b.sweep != nil || b.expiry.head == nil || b.closed {
		return
	}
	d := time.Duration(b.expiry.head.expires - b.cfg.Clock.Now().UnixNano())
	if d < 0 {
		d = time.Second // a slot still being written at its expiry: look again soon
	}
	b.sweep = b.cfg.Clock.AfterFunc(d, b.sweepNow)
}

// sweepNow removes every slot whose time has come, then re-arms.
func (b *Box) sweepNow() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sweep = nil
	now := b.cfg.Clock.Now().UnixNano()
	for s := b.expiry.head; s != nil && s.expires <= now; {
		next := s.e.next
		if s.writing == nil { // one being written: its write decides
			b.remove(s)
		}
		s = next
	}
	b.armSweep()
}

// Depths returns how many invocations wait for each client: in the queues
// this replica is home to, or in the backlog.
func (b *Box) Depths(context.Context) (map[string]int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[string]int, len(b.queues)+len(b.backlog))
	for client, recs := range b.backlog {
		out[client] = len(recs)
	}
	for client, q := range b.queues {
		if n := q.pending.n + q.handed.n; n > out[client] {
			out[client] = n
		}
	}
	return out, nil
}

// Len is the number of invocations this replica holds in memory.
func (b *Box) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.slots)
}
