package retry

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

const ms = time.Millisecond

func waits(b *Backoff, n int) []time.Duration {
	var out []time.Duration
	for range n {
		out = append(out, b.Next())
	}
	return out
}

func TestTheWaitsGrowToTheCapAndResetToBase(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		p    Policy
		want []time.Duration
	}{
		{"doubling stops at the cap", Policy{Base: 100 * ms, Max: time.Second, Multiplier: 2},
			[]time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, time.Second, time.Second}},
		{"a multiplier below one holds the wait", Policy{Base: 100 * ms, Max: time.Second, Multiplier: 0.5},
			[]time.Duration{100 * ms, 100 * ms, 100 * ms}},
		{"a cap below the base is the base", Policy{Base: 300 * ms, Max: 100 * ms, Multiplier: 2},
			[]time.Duration{300 * ms, 300 * ms}},
		{"a huge multiplier does not overflow past the cap", Policy{Base: time.Hour, Max: 1 << 62, Multiplier: 1e30},
			[]time.Duration{time.Hour, 1 << 62, 1 << 62}},
		{"the default is docs/design.md §5's timing before jitter", Policy{Base: Default.Base, Max: Default.Max, Multiplier: Default.Multiplier},
			[]time.Duration{500 * ms, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := NewBackoff(tt.p)
			if got := waits(b, len(tt.want)); !slices.Equal(got, tt.want) {
				t.Errorf("waits = %v, want %v", got, tt.want)
			}
			b.Reset()
			if got := b.Next(); got != tt.want[0] {
				t.Errorf("after Reset the wait is %v, want the first, %v", got, tt.want[0])
			}
		})
	}
}

func TestJitterShortensAWaitByAtMostItsFraction(t *testing.T) {
	t.Parallel()
	p := Policy{Base: time.Second, Max: time.Second, Multiplier: 2, Jitter: 0.25}
	for _, tt := range []struct {
		name string
		draw float64
		want time.Duration
	}{
		{"the lowest draw keeps the whole wait", 0, time.Second},
		{"half the draw takes an eighth off", 0.5, 875 * ms},
		{"the highest draw stays above the bound", 0.999, 750250 * time.Microsecond},
	} {
		b := NewBackoff(p)
		b.rand = func() float64 { return tt.draw }
		if got := b.Next(); got != tt.want {
			t.Errorf("%s: wait = %v, want %v", tt.name, got, tt.want)
		}
	}
	// The real dice: every wait inside (d·(1−J), d].
	b := NewBackoff(p)
	for range 1000 {
		if d := b.Next(); d <= 750*ms || d > time.Second {
			t.Fatalf("a jittered wait of %v is outside (750ms, 1s]", d)
		}
	}
	// A jitter outside [0, 1] is clamped: the wait never goes negative.
	b = NewBackoff(Policy{Base: time.Second, Max: time.Second, Jitter: 7})
	b.rand = func() float64 { return 0.999 }
	if d := b.Next(); d < 0 || d > time.Second {
		t.Errorf("a jitter of 7 gave a wait of %v", d)
	}
}

// fake is a clock the attempts move, and a sleep that records the waits.
type fake struct {
	now   time.Time
	waits []time.Duration
}

func (f *fake) hooks() hooks {
	return hooks{
		now: func() time.Time { return f.now },
		sleep: func(ctx context.Context, d time.Duration, _ <-chan struct{}) bool {
			f.waits = append(f.waits, d)
			f.now = f.now.Add(d)
			return ctx.Err() == nil
		},
		rand: func() float64 { return 0 },
	}
}

func TestForeverResetsAfterProgressOrAStableRun(t *testing.T) {
	t.Parallel()
	f := &fake{now: time.Unix(0, 0)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Each attempt: how long it lasts, and whether it reported progress.
	script := []struct {
		lasted   time.Duration
		progress bool
	}{
		{0, false}, {0, false}, {0, false}, // 1, 2, 4
		{0, true},                 // progress: back to 1
		{0, false},                // 2
		{10 * time.Second, false}, // stable: back to 1
		{9 * time.Second, false},  // not stable: 2
	}
	i := 0
	l := Loop{Policy: Policy{Base: time.Second, Max: 4 * time.Second, Multiplier: 2, Stable: 10 * time.Second}, hooks: f.hooks()}
	err := l.Forever(ctx, func(context.Context) (bool, error) {
		s := script[i]
		i++
		f.now = f.now.Add(s.lasted)
		if i == len(script) {
			defer cancel()
		}
		return s.progress, errors.New("the stream ended")
	})
	if err != nil {
		t.Fatalf("Forever ended by its context returned %v", err)
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, time.Second, 2 * time.Second, time.Second}
	if !slices.Equal(f.waits, want) {
		t.Errorf("waits = %v, want %v", f.waits, want)
	}
}

// A failure with a ceiling waits at most that long, whatever the run of
// failures has grown to; the others wait as the policy says.
func TestACeilingCapsTheWaitAfterItsFailuresOnly(t *testing.T) {
	t.Parallel()
	f := &fake{now: time.Unix(0, 0)}
	brief, long := errors.New("electing"), errors.New("down")
	script := []error{long, long, brief, long, brief}
	i := 0
	l := Loop{Policy: Policy{Base: time.Second, Max: 8 * time.Second, Multiplier: 2}, hooks: f.hooks(),
		Ceiling: func(err error) time.Duration {
			if err == brief {
				return 1500 * ms
			}
			return 0
		}}
	err := l.Do(context.Background(), func(context.Context) error {
		if i == len(script) {
			return nil
		}
		i++
		return script[i-1]
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{time.Second, 2 * time.Second, 1500 * ms, 8 * time.Second, 1500 * ms}
	if !slices.Equal(f.waits, want) {
		t.Errorf("waits = %v, want %v", f.waits, want)
	}
}

func TestForeverReturnsAStoppedError(t *testing.T) {
	t.Parallel()
	f := &fake{now: time.Unix(0, 0)}
	refused := errors.New("refused")
	calls := 0
	err := Loop{Policy: Default, hooks: f.hooks()}.Forever(context.Background(), func(context.Context) (bool, error) {
		calls++
		if calls == 3 {
			return false, Stop(refused)
		}
		return false, errors.New("again")
	})
	if err != refused || calls != 3 || len(f.waits) != 2 {
		t.Errorf("err %v after %d calls and %d waits; want the unwrapped refusal after 3 calls, 2 waits", err, calls, len(f.waits))
	}
}

func TestDoStops(t *testing.T) {
	t.Parallel()
	transient, final := errors.New("unavailable"), errors.New("invalid")
	tests := []struct {
		name      string
		loop      Loop
		results   []error
		want      error
		wantCalls int
	}{
		{"at the first success", Loop{}, []error{transient, transient, nil}, nil, 3},
		{"when the tries are spent", Loop{Tries: 3}, []error{transient, transient, transient, transient}, transient, 3},
		{"at an error not worth retrying", Loop{Retryable: func(err error) bool { return err == transient }},
			[]error{transient, final, nil}, final, 2},
		{"at an error marked Stop", Loop{}, []error{transient, Stop(final), nil}, final, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := &fake{now: time.Unix(0, 0)}
			l := tt.loop
			l.Policy, l.hooks = Policy{Base: ms, Max: time.Second, Multiplier: 2}, f.hooks()
			var told []time.Duration
			l.OnRetry = func(_ error, d time.Duration) { told = append(told, d) }
			calls := 0
			err := l.Do(context.Background(), func(context.Context) error {
				calls++
				return tt.results[calls-1]
			})
			if err != tt.want || calls != tt.wantCalls {
				t.Errorf("Do = %v after %d calls, want %v after %d", err, calls, tt.want, tt.wantCalls)
			}
			if !slices.Equal(told, f.waits) || len(f.waits) != calls-1 {
				t.Errorf("OnRetry was told %v, the loop waited %v; want one wait between each two calls", told, f.waits)
			}
		})
	}
}

func TestAWaitPastTheDeadlineIsNotBegun(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	calls := 0
	l := Loop{Policy: Policy{Base: 2 * time.Hour}, hooks: hooks{sleep: func(context.Context, time.Duration, <-chan struct{}) bool {
		t.Error("the loop began a wait that outlasts its context")
		return false
	}}}
	err := l.Do(ctx, func(context.Context) error { calls++; return errors.New("no") })
	if err == nil || calls != 1 {
		t.Errorf("Do = %v after %d calls; want the error after one", err, calls)
	}
}

func TestCancellingTheContextEndsAWaitAtOnce(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	attempted := make(chan struct{}, 1)
	go func() {
		done <- Loop{Policy: Policy{Base: time.Hour}}.Forever(ctx, func(context.Context) (bool, error) {
			attempted <- struct{}{}
			return false, errors.New("down")
		})
	}()
	<-attempted
	cancel() // the loop is waiting an hour, or about to: either way it ends now
	if err := <-done; err != nil {
		t.Errorf("Forever ended by its context returned %v", err)
	}
}

func TestSleepEndsAtAWake(t *testing.T) {
	t.Parallel()
	wake := make(chan struct{}, 1)
	wake <- struct{}{}
	if !Sleep(context.Background(), time.Hour, wake) {
		t.Error("Sleep woken with its context live reported it ended")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if Sleep(ctx, time.Hour, nil) {
		t.Error("Sleep under an ended context reported it live")
	}
}
