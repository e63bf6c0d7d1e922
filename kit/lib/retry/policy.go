// Package retry holds the suite's one way to try again: a backoff Policy
// (how long to wait after each failure, and when to start again from the
// first wait) and a Loop that runs an attempt under it, honouring its
// context. Every redial, watch, supervisor and "a few more tries" in the
// suite uses it.
package retry

import (
	"math/rand/v2"
	"time"
)

// Policy is how long to wait between attempts. The waits grow from Base by
// Multiplier up to Max; each is then shortened by a random fraction of up
// to Jitter, so that many peers that lost the same server do not all come
// back in the same instant. A wait never exceeds Max.
//
// The reset rule: an attempt that reported progress (a stream opened, a
// snapshot arrived), or that lasted at least Stable, ends a run of
// failures; the wait after it starts again from Base.
type Policy struct {
	// Base is the first wait.
	Base time.Duration
	// Max caps every wait; below Base it is Base.
	Max time.Duration
	// Multiplier grows the wait after each failure; values below 1 are 1.
	Multiplier float64
	// Jitter is the largest fraction, in [0, 1], taken off a wait at
	// random: a wait d is drawn from (d·(1−Jitter), d].
	Jitter float64
	// Stable is how long an attempt must last for its end to count as a
	// new failure rather than one more of a run; zero: duration never
	// resets, only reported progress does.
	Stable time.Duration
}

// Default is the policy of every redial and watch in the suite that has no
// reason of its own to differ: 0.5 s doubling to 30 s (the supervision
// timing of docs/design.md §5), a fifth of jitter, and a run of 30 s counts as
// healthy.
var Default = Policy{
	Base:       500 * time.Millisecond,
	Max:        30 * time.Second,
	Multiplier: 2,
	Jitter:     0.2,
	Stable:     30 * time.Second,
}

// Backoff is one Policy's state across a run of failures. It is not safe
// for concurrent use; each loop keeps its own.
type Backoff struct {
	p    Policy
	next time.Duration // the nominal wait the next call to Next returns
	rand func() float64
}

// NewBackoff returns the state of p before its first failure.
func NewBackoff(p Policy) *Backoff {
	b := &Backoff{p: p, rand: rand.Float64}
	b.Reset()
	return b
}

// Next returns the wait after one more failure and advances the run.
func (b *Backoff) Next() time.Duration {
	d := b.next
	// Grown in floating point: past the cap it is the cap, never an
	// overflowed Duration.
	ceiling := b.p.ceiling()
	if grown := float64(b.next) * max(b.p.Multiplier, 1); grown < float64(ceiling) {
		b.next = time.Duration(grown)
	} else {
		b.next = ceiling
	}
	if j := min(max(b.p.Jitter, 0), 1); j > 0 {
		d -= time.Duration(j * b.rand() * float64(d))
	}
	return d
}

// Reset starts the run of failures again: the next wait is Base.
func (b *Backoff) Reset() { b.next = max(b.p.Base, 0) }

// ceiling is the largest wait: Max, or Base when Max is below it.
func (p Policy) ceiling() time.Duration { return max(p.Max, p.Base, 0) }

// resets reports whether an attempt that lasted took, and did or did not
// report progress, ends the run of failures (the reset rule above).
func (p Policy) resets(progress bool, took time.Duration) bool {
	return progress || (p.Stable > 0 && took >= p.Stable)
}
