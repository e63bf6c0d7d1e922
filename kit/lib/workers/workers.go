// Package workers runs functions on goroutines that stay for the next
// one: a fresh goroutine grows its stack again on every deep call path
// (runtime.newstack), a worker that stays has grown it once.
package workers

import "sync"

// Pool hands each function to an idle worker, or to a new goroutine when
// none is idle; it never blocks nor bounds how many run at once.
type Pool struct {
	mu     sync.Mutex
	idle   []chan func() // the idle workers' inboxes, the last idle first
	keep   int           // the most idle workers kept
	closed bool
}

// New returns a pool that keeps at most keep workers idle.
func New(keep int) *Pool { return &Pool{keep: keep} }

// Go runs f on a worker; after Close, on a goroutine of its own.
func (p *Pool) Go(f func()) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		in := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		in <- f
		return
	}
	p.mu.Unlock()
	go p.work(f)
}

// work runs f, then waits idle for the next function unless the pool is
// closed or keeps enough idle workers already.
func (p *Pool) work(f func()) {
	in := make(chan func(), 1)
	for f != nil {
		f()
		p.mu.Lock()
		if p.closed || len(p.idle) >= p.keep {
			p.mu.Unlock()
			return
		}
		p.idle = append(p.idle, in)
		p.mu.Unlock()
		f = <-in
	}
}

// Close ends the idle workers; the busy ones end when their function
// returns.
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, in := range idle {
		close(in)
	}
}
