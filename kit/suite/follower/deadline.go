package follower

import (
	"context"
	"fmt"
	"time"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
)

// DefaultDeadline is the per-call deadline of a host that sets none
// (docs/design.md §5, §6).
const DefaultDeadline = 10 * time.Minute

// Overrun is the cause of a run's context that reached its deadline: the
// host's per-call deadline, or the invocation's own timeout when that was
// shorter. A run that overran is answered (exit code 124), unlike one its
// poster cancelled.
type Overrun struct {
	// Limit is the deadline's length: the host's per-call deadline, or the
	// whole of the driver's timeout (of which less may have been left).
	Limit time.Duration
	// Own is true when it was the invocation's own timeout, set by its
	// driver, and false for the host's per-call deadline.
	Own bool
	// Expired is true when it was the invocation's slot in the mailbox
	// expiring: nobody can collect its capture after that.
	Expired bool
}

func (o *Overrun) Error() string {
	switch {
	case o.Own:
		return fmt.Sprintf("its timeout of %v ran out", o.Limit)
	case o.Expired:
		return "its slot in the mailbox expired (--ttl), so nobody could collect its capture"
	}
	return fmt.Sprintf("it ran past the per-call deadline of %v", o.Limit)
}

// Overran reports whether ctx, a run's context, ended at its deadline, and
// which.
func Overran(ctx context.Context) (*Overrun, bool) {
	if ctx.Err() == nil {
		return nil, false
	}
	o, ok := context.Cause(ctx).(*Overrun)
	return o, ok
}

// limit is the deadline of a run of inv taken at now: the host's, or what
// is left of the invocation's own timeout when shorter.
func (f *Follower) limit(inv *mailboxv1.Invocation, now time.Time) (time.Time, *Overrun) {
	o, left := &Overrun{Limit: f.o.Deadline}, f.o.Deadline
	if t := inv.GetTimeLeft(); t != nil && t.AsDuration() < left {
		left = t.AsDuration()
		o = &Overrun{Limit: left, Expired: true}
		if inv.GetTimeout() != nil {
			o = &Overrun{Limit: inv.GetTimeout().AsDuration(), Own: true}
		}
	}
	return now.Add(left), o
}

// runContext is the context of one run: RunContext, a cancel by its
// poster, and its deadline.
func (f *Follower) runContext(c *call) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(f.o.RunContext)
	ctx, stop := context.WithDeadlineCause(ctx, c.deadline, c.overrun)
	return ctx, func() { stop(); cancel() }
}

// overrunCapture answers a run that overran when its runner had nothing to
// say about it: it did not start, or the runner ended without a capture.
func overrunCapture(id string, o *Overrun, started bool) *mailboxv1.Capture {
	if !started {
		return capture.Failed(capture.ExitTimeout, "switchboard: invocation %s was not run: %v before it could start", id, o)
	}
	return capture.Failed(capture.ExitTimeout, "switchboard: invocation %s was stopped: %v", id, o)
}
