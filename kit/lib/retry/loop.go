package retry

import (
	"context"
	"errors"
	"time"
)

// Stop marks err as final: a Loop returns it (unwrapped) at once instead of
// trying again. Stop(nil) is nil.
func Stop(err error) error {
	if err == nil {
		return nil
	}
	return stopped{err}
}

type stopped struct{ err error }

func (s stopped) Error() string { return s.err.Error() }
func (s stopped) Unwrap() error { return s.err }

// Loop runs an attempt again after each failure, waiting as its Policy
// says. A wait ends at once when the context ends, and a wait that would
// end past the context's deadline is not begun: the loop never sleeps past
// its context.
type Loop struct {
	Policy Policy
	// Tries bounds Do's attempts; zero is no bound.
	Tries int
	// Retryable says whether Do tries again after err; nil: after every
	// error. An error marked with Stop is never tried again.
	Retryable func(err error) bool
	// OnRetry, when set, is told each failure that will be tried again and
	// how long the loop waits first.
	OnRetry func(err error, wait time.Duration)
	// Ceiling, when set, caps the wait after err: a fault known to pass in
	// seconds (a store electing its leader) is tried again that soon, while
	// the run of failures still grows toward Policy.Max for the rest.
	Ceiling func(err error) time.Duration
	// Wake, when set, ends a wait early: something changed that makes
	// trying at once worthwhile. The run of failures goes on.
	Wake <-chan struct{}

	hooks hooks // the clock and the dice; tests replace them
}

// hooks are what a Loop asks of the world.
type hooks struct {
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration, wake <-chan struct{}) bool
	rand  func() float64
}

// Do calls attempt until it returns nil, fails with an error not to be
// tried again, has been tried Tries times, or ctx ends. It returns nil on
// success, else attempt's last error.
func (l Loop) Do(ctx context.Context, attempt func(context.Context) error) error {
	b := l.backoff()
	for try := 1; ; try++ {
		err := attempt(ctx)
		if err == nil {
			return nil
		}
		if s, ok := errors.AsType[stopped](err); ok {
			return s.err
		}
		if ctx.Err() != nil || (l.Tries > 0 && try >= l.Tries) || (l.Retryable != nil && !l.Retryable(err)) {
			return err
		}
		if !l.wait(ctx, b.Next(), err) {
			return err
		}
	}
}

// Forever calls attempt again each time it returns, until ctx ends (or
// would end during the next wait) or attempt fails with an error marked
// Stop. It returns nil when ctx ended, else that error. attempt reports
// progress when it got somewhere before it ended (a stream opened); that,
// or lasting Policy.Stable, starts the waits again from Base.
func (l Loop) Forever(ctx context.Context, attempt func(context.Context) (progress bool, err error)) error {
	b := l.backoff()
	now := l.now()
	for ctx.Err() == nil {
		start := now()
		progress, err := attempt(ctx)
		if s, ok := errors.AsType[stopped](err); ok {
			return s.err
		}
		if ctx.Err() != nil {
			return nil
		}
		if l.Policy.resets(progress, now().Sub(start)) {
			b.Reset()
		}
		if !l.wait(ctx, b.Next(), err) {
			return nil
		}
	}
	return nil
}

func (l Loop) backoff() *Backoff {
	b := NewBackoff(l.Policy)
	if l.hooks.rand != nil {
		b.rand = l.hooks.rand
	}
	return b
}

func (l Loop) now() func() time.Time {
	if l.hooks.now != nil {
		return l.hooks.now
	}
	return time.Now
}

// wait tells OnRetry and waits d; false when ctx ended or would end first.
func (l Loop) wait(ctx context.Context, d time.Duration, err error) bool {
	if l.Ceiling != nil {
		if c := l.Ceiling(err); c > 0 {
			d = min(d, c)
		}
	}
	if deadline, ok := ctx.Deadline(); ok && l.now()().Add(d).After(deadline) {
		return false
	}
	if l.OnRetry != nil {
		l.OnRetry(err, d)
	}
	sleep := l.hooks.sleep
	if sleep == nil {
		sleep = Sleep
	}
	return sleep(ctx, d, l.Wake)
}

// Sleep waits d, or until ctx ends or wake receives (a nil wake never
// does). It reports whether ctx is still live.
func Sleep(ctx context.Context, d time.Duration, wake <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
	case <-wake:
	}
	return ctx.Err() == nil
}
