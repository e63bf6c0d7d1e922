package follower

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

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

// Asker returns the function through which the run whose context ctx is
// asks its driver an MCP request (method, params as JSON) and gets the
// answer's result; a refused question comes back as a *jsonrpc.Error.
// Questions are named by the hand-off (delivery) and the order asked, so a
// run handed out again asks anew.
func Asker(ctx context.Context, delivery int32) func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	ask := Ask(ctx)
	var asked atomic.Int64
	return func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		q := &mailboxv1.Question{Id: fmt.Sprintf("h%dq%d", delivery, asked.Add(1)), Method: method, Params: string(params)}
		a, err := ask(ctx, q)
		if err != nil {
			return nil, err
		}
		if e := a.GetError(); e != nil {
			return nil, &jsonrpc.Error{Code: int64(e.GetCode()), Message: e.GetMessage()}
		}
		return json.RawMessage(a.GetResult()), nil
	}
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
