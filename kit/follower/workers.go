package follower

import "context"

// Runs go to goroutines kept between calls, not to a new goroutine each. A
// run goes deep (the runner, an MCP client, gRPC), and a fresh goroutine
// grows its stack through all of that on every call: under load, that
// copying was a seventh of the CPU the bridge's runs took. A worker that
// frees a slot runs the queued call that takes it; with none queued it
// waits to be handed the next, until the follower's Run returns. A worker
// starts only when a run has a slot and no worker waits, so at most one
// more worker than slots lives: one that has just freed its slot and not
// yet begun to wait, while another takes that slot.

// job is one call to serve, with the context it runs in.
type job struct {
	ctx context.Context
	c   *call
}

// dispatch hands j to a waiting worker, or starts one. f.mu is held; f.wg
// counts the run already.
func (f *Follower) dispatch(j job) {
	select {
	case f.idle <- j:
	default:
		go f.work(j)
	}
}

// work serves j, then the call whose slot j freed, if one waits, then
// whatever it is handed next, until the follower stops.
func (f *Follower) work(j job) {
	for {
		if next, ok := f.serve(j.ctx, j.c); ok {
			j = next
			continue
		}
		select {
		case j = <-f.idle:
		case <-f.stopped:
			return
		}
	}
}

// stop lets the waiting workers go; the runs are over by then (Run waits
// for them first).
func (f *Follower) stop() {
	f.stopOnce.Do(func() { close(f.stopped) })
}
