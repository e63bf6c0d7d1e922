package slots

import "time"

// Slots expire TTL after their post, collected or not: a sweeper armed for
// the oldest slot's expiry, not a tick and not only at the next post. TTL is
// constant, so the expiry list (oldest first) is in expiry order and the
// sweeper only ever looks at its head.

// armSweep arms the sweeper for the oldest slot. Called with the box locked.
func (b *Box) armSweep() {
	if b.sweep != nil || b.expiry.head == nil || b.closed {
		return
	}
	d := time.Duration(b.expiry.head.expires - b.cfg.Clock.Now().UnixNano())
	b.sweep = b.cfg.Clock.AfterFunc(max(d, 0), b.sweepNow)
}

// sweepNow removes every slot whose time has come, then re-arms.
func (b *Box) sweepNow() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sweep = nil
	now := b.cfg.Clock.Now().UnixNano()
	for s := b.expiry.head; s != nil && s.expires <= now; s = b.expiry.head {
		b.remove(s)
	}
	b.armSweep()
}
