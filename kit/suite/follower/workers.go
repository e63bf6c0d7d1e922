package follower

import "context"

// Runs go to goroutines kept between calls: a fresh goroutine grows its
// stack through the runner, an MCP client and gRPC on every call (a seventh
// of the bridge's CPU under load). A worker that frees a slot runs the
// queued call that takes it, else waits for the next; one starts only when
// a run has a slot and none waits, so at most slots+1 live.

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
