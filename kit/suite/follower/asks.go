package follower

import (
	"context"
	"errors"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
)

// question names one question of one run.
type question struct{ invocation, id string }

// errNotARun is Ask outside a run: there is no poster to ask.
var errNotARun = errors.New("no invocation is running in this context, so there is nobody to ask")

// Ask returns the function through which the run whose context ctx is asks
// its invocation's poster a question (ReportRequest.question) and waits
// for the answer on the read, until the asking context ends. Outside a run
// the function refuses at once.
func Ask(ctx context.Context) func(context.Context, *mailboxv1.Question) (*mailboxv1.Answered, error) {
	if r, ok := ctx.Value(reporterKey{}).(*reporter); ok {
		return r.ask
	}
	return func(context.Context, *mailboxv1.Question) (*mailboxv1.Answered, error) { return nil, errNotARun }
}

// ask reports q and waits for its answer.
func (r *reporter) ask(ctx context.Context, q *mailboxv1.Question) (*mailboxv1.Answered, error) {
	key := question{r.id, q.GetId()}
	ch := make(chan *mailboxv1.Answered, 1)
	f := r.f
	f.mu.Lock()
	f.answers[key] = ch
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.answers, key)
		f.mu.Unlock()
	}()
	sent, cancel := context.WithTimeout(ctx, reportAttemptLimit)
	_, err := f.o.Mailbox.Report(f.o.As(sent), &mailboxv1.ReportRequest{Invocation: r.id, Question: q})
	cancel()
	if err != nil {
		return nil, err
	}
	select {
	case a := <-ch:
		return a, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// answered gives an answer to the run waiting for it; one nobody waits
// for (its run ended, or it was answered twice) is dropped.
func (f *Follower) answered(a *mailboxv1.Answered) {
	f.mu.Lock()
	ch := f.answers[question{a.GetInvocation(), a.GetQuestion()}]
	f.mu.Unlock()
	if ch != nil {
		select {
		case ch <- a:
		default:
		}
	}
}
