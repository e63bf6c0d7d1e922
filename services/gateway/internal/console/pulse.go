package console

import "sync"

// pulse tells the open live views of one kind that something changed,
// coalesced like the watch's changes: each subscriber holds at most one
// pending beat. The servers view beats after a mount or unmount made from
// this gateway's console, because the registry's changes that a mount
// causes may come before the bridge's own state has moved.
type pulse struct {
	mu   sync.Mutex
	subs map[chan struct{}]struct{}
}

// subscribe returns a channel that receives beats until cancel is called.
func (p *pulse) subscribe() (<-chan struct{}, func()) {
	c := make(chan struct{}, 1)
	p.mu.Lock()
	if p.subs == nil {
		p.subs = map[chan struct{}]struct{}{}
	}
	p.subs[c] = struct{}{}
	p.mu.Unlock()
	return c, func() {
		p.mu.Lock()
		delete(p.subs, c)
		p.mu.Unlock()
	}
}

// beat signals every subscriber without waiting for any.
func (p *pulse) beat() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.subs {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}
