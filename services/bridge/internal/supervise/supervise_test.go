package supervise

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
)

// run is a started server the test ends by hand, or that ends with its
// context.
type run struct {
	ctx  context.Context
	exit chan error
}

func (r *run) Wait() error {
	select {
	case err := <-r.exit:
		return err
	case <-r.ctx.Done():
		return r.ctx.Err()
	}
}

// recorder collects transitions and start times.
type recorder struct {
	mu      sync.Mutex
	states  []Status
	starts  []time.Time
	changed chan Status
}

func newRecorder() *recorder { return &recorder{changed: make(chan Status, 1000)} }

func (r *recorder) onChange(s Status) {
	r.mu.Lock()
	r.states = append(r.states, s)
	r.mu.Unlock()
	r.changed <- s
}

func (r *recorder) started() {
	r.mu.Lock()
	r.starts = append(r.starts, time.Now())
	r.mu.Unlock()
}

// await reads transitions until one is in state want.
func (r *recorder) await(t *testing.T, want bridgev1.State) Status {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case s := <-r.changed:
			if s.State == want {
				return s
			}
		case <-timeout:
			t.Fatalf("no transition to %v within 10s", want)
		}
	}
}

func TestCrashesInARowEndFailedWithDoublingBackoff(t *testing.T) {
	t.Parallel()
	rec := newRecorder()
	start := func(ctx context.Context) (Run, error) {
		rec.started()
		return nil, errors.New("exited with status 3")
	}
	s := Start(context.Background(), start, Options{CrashLimit: 4, Backoff: 20 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, OnChange: rec.onChange})
	defer s.Stop()
	st := rec.await(t, bridgev1.State_STATE_FAILED)
	if st.Streak != 4 || st.Restarts != 3 || st.Fault != "exited with status 3" {
		t.Errorf("failed status = %+v, want streak 4, restarts 3 and the fault", st)
	}
	rec.mu.Lock()
	starts := append([]time.Time(nil), rec.starts...)
	rec.mu.Unlock()
	if len(starts) != 4 {
		t.Fatalf("started %d times, want 4", len(starts))
	}
	// Backoffs 20, 40, then capped at 50 ms.
	for i, want := range []time.Duration{20, 40, 50} {
		if gap := starts[i+1].Sub(starts[i]); gap < want*time.Millisecond {
			t.Errorf("restart %d came after %v, want at least %v", i+1, gap, want*time.Millisecond)
		}
	}
	if got := s.Status().State; got != bridgev1.State_STATE_FAILED {
		t.Errorf("state after the limit = %v, want failed to stay", got)
	}
	s.Stop()
	if got := s.Status().State; got != bridgev1.State_STATE_STOPPED {
		t.Errorf("state after Stop = %v, want stopped", got)
	}
}

func TestARunThatDiesIsRestartedAndRunsAgain(t *testing.T) {
	t.Parallel()
	rec := newRecorder()
	runs := make(chan *run, 10)
	start := func(ctx context.Context) (Run, error) {
		r := &run{ctx: ctx, exit: make(chan error, 1)}
		runs <- r
		return r, nil
	}
	s := Start(context.Background(), start, Options{Backoff: time.Millisecond, OnChange: rec.onChange})
	defer s.Stop()
	rec.await(t, bridgev1.State_STATE_RUNNING)
	(<-runs).exit <- errors.New("process exited: signal: killed")
	crashed := rec.await(t, bridgev1.State_STATE_CRASHED)
	if crashed.Fault != "process exited: signal: killed" || crashed.Streak != 1 {
		t.Errorf("crashed status = %+v", crashed)
	}
	again := rec.await(t, bridgev1.State_STATE_RUNNING)
	if again.Restarts != 1 {
		t.Errorf("restarts = %d, want 1", again.Restarts)
	}
}

func TestAStableRunResetsTheStreak(t *testing.T) {
	t.Parallel()
	rec := newRecorder()
	runs := make(chan *run, 10)
	start := func(ctx context.Context) (Run, error) {
		r := &run{ctx: ctx, exit: make(chan error, 1)}
		runs <- r
		return r, nil
	}
	s := Start(context.Background(), start, Options{CrashLimit: 2, Backoff: time.Millisecond, Stable: 30 * time.Millisecond, OnChange: rec.onChange})
	defer s.Stop()
	for i := range 4 {
		rec.await(t, bridgev1.State_STATE_RUNNING)
		r := <-runs
		time.Sleep(40 * time.Millisecond) // outlive Stable: this run counts as healthy
		r.exit <- fmt.Errorf("crash %d", i)
		if st := rec.await(t, bridgev1.State_STATE_CRASHED); st.Streak != 1 {
			t.Fatalf("crash %d after a stable run: streak %d, want 1", i, st.Streak)
		}
	}
	// Two quick crashes in a row reach the limit of 2.
	rec.await(t, bridgev1.State_STATE_RUNNING)
	(<-runs).exit <- errors.New("quick")
	if st := rec.await(t, bridgev1.State_STATE_FAILED); st.Streak != 2 {
		t.Errorf("streak at failure = %d, want 2", st.Streak)
	}
}

func TestStopEndsEveryPhaseStopped(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		start StartFunc
		phase bridgev1.State
	}{
		{"stop while running cancels the run", func(ctx context.Context) (Run, error) {
			return &run{ctx: ctx, exit: make(chan error)}, nil
		}, bridgev1.State_STATE_RUNNING},
		{"stop during the backoff cancels the restart", func(ctx context.Context) (Run, error) {
			return nil, errors.New("no")
		}, bridgev1.State_STATE_CRASHED},
		{"stop while starting abandons the start", func(ctx context.Context) (Run, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}, bridgev1.State_STATE_STARTING},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := newRecorder()
			s := Start(context.Background(), tt.start, Options{Backoff: time.Hour, OnChange: rec.onChange})
			rec.await(t, tt.phase)
			s.Stop()
			if got := s.Status().State; got != bridgev1.State_STATE_STOPPED {
				t.Errorf("state after Stop = %v, want stopped", got)
			}
			select {
			case <-s.Done():
			default:
				t.Error("Done is not closed after Stop")
			}
			s.Stop() // a second Stop is harmless
		})
	}
}
