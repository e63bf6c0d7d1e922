package slots

import (
	"context"
	"time"
)

// Depths returns how many invocations wait in each client's queue: queued,
// or handed to a read without an answer yet.
func (b *Box) Depths(context.Context) (map[string]int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[string]int, len(b.queues))
	for client, q := range b.queues {
		if n := q.pending.n + q.handed.n; n > 0 {
			out[client] = n
		}
	}
	return out, nil
}

// posted is when s was posted: its expiry less the TTL, which is constant.
func (b *Box) posted(s *slot) time.Time {
	return time.Unix(0, s.expires).Add(-b.cfg.TTL)
}
