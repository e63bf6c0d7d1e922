// Package supervise keeps one upstream server alive: it starts it, notices
// when it dies, restarts it after a backoff that doubles, and gives up after
// a number of crashes in a row (docs/design.md §5, after the plugin-backend host).
//
// The states are bridgev1.State's: starting, running, crashed (a restart is
// scheduled), failed (the crash limit was reached; it stays down until it is
// mounted again) and stopped.
//
// The crash streak resets when a run has stayed up for Options.Stable (30 s by
// default), not at every successful initialise: a server that initialises and
// then dies at once, every time, must still end up failed instead of
// restarting forever.
package supervise

import (
	"context"
	"errors"
	"sync"
	"time"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	"github.com/switchboard-run/switchboard/kit/lib/retry"
)

// Defaults from docs/design.md §5.
const (
	DefaultBackoff    = 500 * time.Millisecond
	DefaultMaxBackoff = 30 * time.Second
	DefaultCrashLimit = 5
	DefaultStable     = 30 * time.Second
)

// Run is one started server. Wait blocks until it ends and says why; it must
// return once the context given to Start is done.
type Run interface {
	Wait() error
}

// StartFunc brings the server up: it returns once the server is ready to
// serve, or with the reason it could not start. ctx ends when the supervisor
// stops.
type StartFunc func(ctx context.Context) (Run, error)

// Options tune a supervisor; zero values take the defaults.
type Options struct {
	// CrashLimit is how many crashes in a row make the server failed.
	CrashLimit int
	// Backoff is the first restart delay; it doubles up to MaxBackoff.
	Backoff, MaxBackoff time.Duration
	// Stable is how long a run must last for its end not to count towards
	// the streak of an earlier crash (the streak and backoff reset).
	Stable time.Duration
	// OnChange is called, from the supervisor's goroutine, after every
	// transition. It must not call Stop.
	OnChange func(Status)
}

// Status is the supervisor's state at one moment.
type Status struct {
	State bridgev1.State
	// Restarts counts starts after the first.
	Restarts int
	// Streak counts crashes in a row.
	Streak int
	// Fault is why the last run ended or failed to start; empty before any.
	Fault string
}

// Supervisor runs one server's life in its own goroutine.
type Supervisor struct {
	start  StartFunc
	opts   Options
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	status Status
}

// Start begins supervising: it calls start at once, and again after every
// crash until the crash limit or Stop.
func Start(ctx context.Context, start StartFunc, opts Options) *Supervisor {
	if opts.CrashLimit <= 0 {
		opts.CrashLimit = DefaultCrashLimit
	}
	if opts.Backoff <= 0 {
		opts.Backoff = DefaultBackoff
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = DefaultMaxBackoff
	}
	if opts.Stable <= 0 {
		opts.Stable = DefaultStable
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &Supervisor{start: start, opts: opts, cancel: cancel, done: make(chan struct{}),
		status: Status{State: bridgev1.State_STATE_STARTING}}
	go s.loop(ctx)
	return s
}

// Status returns the current status.
func (s *Supervisor) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}

// Stop ends supervision: the running server's context is cancelled, and Stop
// returns once its run has ended. The final state is stopped. Safe to call
// more than once.
func (s *Supervisor) Stop() {
	s.cancel()
	<-s.done
}

// Done is closed once the supervisor's goroutine has ended.
func (s *Supervisor) Done() <-chan struct{} { return s.done }

func (s *Supervisor) set(f func(*Status)) {
	s.mu.Lock()
	f(&s.status)
	st := s.status
	s.mu.Unlock()
	if s.opts.OnChange != nil {
		s.opts.OnChange(st)
	}
}

// errFailed ends the restarts: the crash limit was reached.
var errFailed = errors.New("the crash limit was reached")

func (s *Supervisor) loop(ctx context.Context) {
	defer close(s.done)
	defer s.set(func(st *Status) { st.State = bridgev1.State_STATE_STOPPED })
	// No jitter: one supervisor restarts one local server, so there is no
	// crowd of peers to spread out, and docs/design.md §5 gives the exact timing.
	restarts := retry.Loop{Policy: retry.Policy{Base: s.opts.Backoff, Max: s.opts.MaxBackoff, Multiplier: 2}}
	first := true
	err := restarts.Forever(ctx, func(ctx context.Context) (stable bool, _ error) {
		stable, failed := s.once(ctx, first)
		first = false
		if failed {
			return stable, retry.Stop(errFailed)
		}
		return stable, nil
	})
	if err != nil {
		<-ctx.Done() // down until mounted again, which starts a new supervisor
	}
}

// once starts the server and waits for its run to end, recording the
// outcome: crashed, or failed at the crash limit. stable reports a run that
// lasted Options.Stable, which resets the streak and the backoff.
func (s *Supervisor) once(ctx context.Context, first bool) (stable, failed bool) {
	s.set(func(st *Status) {
		st.State = bridgev1.State_STATE_STARTING
		if !first {
			st.Restarts++
		}
	})
	run, err := s.start(ctx)
	if ctx.Err() != nil {
		if run != nil {
			_ = run.Wait()
		}
		return false, false
	}
	if err == nil {
		s.set(func(st *Status) { st.State = bridgev1.State_STATE_RUNNING })
		began := time.Now()
		err = run.Wait()
		if ctx.Err() != nil {
			return false, false
		}
		if stable = time.Since(began) >= s.opts.Stable; stable {
			s.set(func(st *Status) { st.Streak = 0 })
		}
	}
	fault := "it stopped without saying why"
	if err != nil {
		fault = err.Error()
	}
	s.set(func(st *Status) {
		st.Streak++
		st.Fault = fault
		if failed = st.Streak >= s.opts.CrashLimit; failed {
			st.State = bridgev1.State_STATE_FAILED
		} else {
			st.State = bridgev1.State_STATE_CRASHED
		}
	})
	return stable, failed
}
