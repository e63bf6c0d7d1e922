package box

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/contract"
	"github.com/switchboard-run/switchboard/kit/suite/natsconn"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
)

// Replicas ask each other over core NATS (docs/architecture.md, "Where
// state lives"): a client's home on sb.host.<client>, one replica on
// sb.mbx.<replica>, and every replica on sb.find.
const (
	hostPrefix  = "sb.host."
	mbxPrefix   = "sb.mbx."
	findSubject = "sb.find"
	// findWait bounds a lookup's wait for a replica that does not answer.
	findWait = 2 * time.Second
	// pingEvery is how often a call waiting at another replica asks whether
	// that replica still lives.
	pingEvery = time.Second
	// pollWait bounds how long one ask waits at another replica for an
	// answer; a wait longer than that asks again, under a retry key. A
	// reply lost in flight (a NATS node going) then costs seconds, not the
	// whole wait.
	pollWait = 3 * time.Second
)

// errNoHome says nobody answered: no replica is home to the client, or the
// replica asked is gone.
var errNoHome = errors.New("no replica answered")

// errSilent says the ask reached a replica that never answered while NATS
// itself did: the replica died between taking the ask and replying.
var errSilent = errors.New("the replica asked did not answer")

// silentError is errSilent as a caller hears it when nothing better is known.
type silentError struct{ st *status.Status }

func silent(subj string) error {
	return silentError{status.Newf(codes.Unavailable,
		"the mailbox replica serving %s stopped answering, likely gone; try again in a moment", subj)}
}

func (e silentError) Error() string              { return e.st.Err().Error() }
func (e silentError) GRPCStatus() *status.Status { return e.st }
func (e silentError) Is(target error) bool       { return target == errSilent }

// ask is one replica's request of another: an act, as the Store method of
// the same name takes it, done there without asking further.
type ask struct {
	Op      string              `json:"op"`
	From    string              `json:"from,omitempty"`
	Client  string              `json:"client,omitempty"`
	ID      string              `json:"id,omitempty"`
	Caller  string              `json:"caller,omitempty"`
	Session string              `json:"session,omitempty"`
	Post    *inflight.Post      `json:"post,omitempty"`
	Wait    time.Duration       `json:"wait,omitempty"`
	After   int64               `json:"after,omitempty"`
	Capture *inflight.Capture   `json:"capture,omitempty"`
	Note    *inflight.Note      `json:"note,omitempty"`
	Reason  string              `json:"reason,omitempty"`
	Keep    bool                `json:"keep,omitempty"`
	Key     string              `json:"key,omitempty"`
	Rev     uint64              `json:"rev,omitempty"`
	Size    int                 `json:"size,omitempty"`
	Answer  *mailboxv1.Answered `json:"answer,omitempty"`
}

// reply is the answer: an error's code and sentence, or the act's result.
type reply struct {
	Code    codes.Code        `json:"code,omitempty"`
	Message string            `json:"message,omitempty"`
	Reason  string            `json:"reason,omitempty"` // the refusal's mailboxcall reason, if any
	Replica string            `json:"replica,omitempty"`
	Held    bool              `json:"held,omitempty"`
	Capture *inflight.Capture `json:"capture,omitempty"`
	State   *inflight.State   `json:"state,omitempty"`
	Seq     int64             `json:"seq,omitempty"`
	Bytes   int               `json:"bytes,omitempty"`
	// Self says the ask reached the asker's own subscription (it became the
	// client's home as it asked): the asker acts here, as with no home.
	Self bool `json:"self,omitempty"`
}

func (r *reply) err() error {
	if r.Code == codes.OK {
		return nil
	}
	if r.Reason != "" {
		return contract.Refusal(status.New(r.Code, r.Message), r.Reason)
	}
	return status.Error(r.Code, r.Message)
}

// request asks subj and decodes the reply; errNoHome when nobody listens,
// errSilent when the replica that got the ask went quiet but NATS did not.
func (b *Box) request(ctx context.Context, subj string, a *ask) (*reply, error) {
	caller := ctx
	a.From = b.name
	data, err := json.Marshal(a)
	if err != nil {
		return nil, err
	}
	timeout := natsconn.RequestTimeout
	if a.Wait > 0 {
		timeout = a.Wait + findWait // the reply is due when the wait ends
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	m, err := b.nc.RequestWithContext(ctx, subj, data)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return nil, errNoHome
	case err != nil && caller.Err() == nil && b.nc.FlushTimeout(findWait) == nil:
		return nil, silent(subj)
	case err != nil:
		return nil, status.Errorf(codes.Unavailable, "the mailbox cannot reach NATS right now to find its other replicas (%v); try again in a moment", err)
	}
	var r reply
	if err := json.Unmarshal(m.Data, &r); err != nil {
		return nil, err
	}
	if r.Self {
		return nil, errNoHome
	}
	return &r, r.err()
}

// dispatch serves what other replicas ask, each on a goroutine of its own
// (an await holds its answer until the invocation's).
func (b *Box) dispatch(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-b.inbox:
			go b.serve(m)
		}
	}
}

func (b *Box) serve(m *nats.Msg) {
	var a ask
	if json.Unmarshal(m.Data, &a) != nil {
		return // not ours
	}
	if a.From == b.name && a.Op != "ping" {
		if a.Op != "find" { // this replica became home as it asked: the asker acts here
			data, _ := json.Marshal(&reply{Replica: b.name, Self: true})
			_ = m.Respond(data)
		}
		return // our own lookup
	}
	ctx := context.Background()
	if a.Wait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, a.Wait)
		defer cancel()
	}
	r := &reply{Replica: b.name}
	var err error
	switch a.Op {
	case "ping":
	case "find":
		b.mu.Lock()
		r.Held = b.slots[a.ID] != nil || b.arriving[a.ID] != ""
		b.mu.Unlock()
	case "post":
		r.Held, err = b.take(a.Post)
	case "queued": // a record posted elsewhere, told at once rather than through the view
		r := &rec{client: a.Post.Client, id: a.Post.ID, poster: a.Post.Poster, state: stQueued, size: a.Size, rev: a.Rev}
		b.mu.Lock()
		b.hear(r)
		b.restub(r)
		b.mu.Unlock()
		return
	case "release":
		err = b.release(ctx, a.Client, a.Session)
	case "complete":
		var c Capture
		if c, err = b.complete(ctx, a.Caller, a.ID, *a.Capture, true); err == nil {
			r.Capture = &c
		}
	case "report":
		r.Seq, r.Bytes, err = b.report(ctx, a.Caller, a.ID, *a.Note, true)
	case "collect":
		r.Capture, err = b.collect(ctx, a.Caller, a.ID, a.Wait > 0, a.Key, true)
	case "status":
		var st inflight.State
		if st, err = b.status(ctx, a.Caller, a.ID, a.After, a.Wait, true); err == nil {
			r.State = &st
		}
	case "answer":
		err = b.answerQuestion(ctx, a.Caller, a.Answer, true)
	case "cancel":
		var c Capture
		if c, err = b.cancel(ctx, a.Caller, a.ID, a.Reason, a.Keep, true); err == nil {
			r.Capture = &c
		}
	default:
		return
	}
	if err != nil {
		st := status.Convert(err)
		r.Code, r.Message, r.Reason = st.Code(), st.Message(), contract.ReasonOf(err)
	}
	data, _ := json.Marshal(r)
	_ = m.Respond(data)
}

// locate asks every other replica whether its memory holds id, and returns
// the one that does ("" when none).
func (b *Box) locate(ctx context.Context, id string) string {
	b.mu.Lock()
	n := len(b.replicas)
	b.mu.Unlock()
	if n == 0 || !inflight.IsID(id) {
		return ""
	}
	inbox := b.nc.NewInbox()
	sub, err := b.nc.SubscribeSync(inbox)
	if err != nil {
		return ""
	}
	defer func() { _ = sub.Unsubscribe() }()
	data, _ := json.Marshal(&ask{Op: "find", From: b.name, ID: id})
	if b.nc.PublishRequest(findSubject, inbox, data) != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, findWait)
	defer cancel()
	for range n {
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			return ""
		}
		var r reply
		if json.Unmarshal(m.Data, &r) == nil && r.Held {
			return r.Replica
		}
	}
	return ""
}

// alive asks replica whether it still lives. A ping that went unanswered
// may have raced its death, so it is asked once more.
func (b *Box) alive(ctx context.Context, replica string) bool {
	for range 2 {
		_, err := b.request(ctx, mbxPrefix+replica, &ask{Op: "ping"})
		if !errors.Is(err, errSilent) {
			return !errors.Is(err, errNoHome)
		}
	}
	return false
}
