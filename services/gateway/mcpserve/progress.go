package mcpserve

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/types/known/durationpb"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/contract"
)

// progressWait is how long one Status read of the relay waits for a newer
// note. The mailbox answers at once when a note or the answer arrives, so
// this bounds only the quiet stretches (the mailbox allows up to 60 s).
const progressWait = 30 * time.Second

// relayNotes relays the call's notes to the client, read by long-polling
// Status after note after, until the call is answered: progress (token not
// nil), log messages at the session's level (logs), questions (asks).
// Nothing follows the result; a failure other than "no invocation yet"
// ends the relay quietly.
func (m *Mirror) relayNotes(as context.Context, session *mcp.ServerSession, token any, logs bool, asks asking, call *running, after int64) *noteRelay {
	ctx, cancel := context.WithCancel(as)
	r := &noteRelay{m: m, as: as, session: session, token: token, logs: logs, asks: asks, cancel: cancel, after: after}
	if asks == askResult {
		r.inputs = make(chan *mailboxv1.ProgressNote, contract.MaxQuestions)
	}
	r.wg.Go(func() {
		id := call.handle()
		if id == "" {
			return
		}
		ask := func(ctx context.Context) (*mailboxv1.StatusResponse, error) {
			return m.mailbox.Status(ctx, &mailboxv1.StatusRequest{Invocation: id, After: r.after, Wait: durationpb.New(progressWait)})
		}
		var st *mailboxv1.StatusResponse
		err := untilStored(ctx, func(ctx context.Context) (err error) {
			st, err = ask(ctx)
			return err
		})
		for ; err == nil; st, err = ask(ctx) {
			r.id = id
			if r.send(ctx, st.GetProgress()) != nil || st.GetCapture() != nil {
				return
			}
		}
	})
	return r
}

// noteRelay is one call's relay of its notes.
type noteRelay struct {
	m       *Mirror
	as      context.Context
	session *mcp.ServerSession
	token   any
	logs    bool
	asks    asking                       // how the host's questions go to the client (questions.go)
	inputs  chan *mailboxv1.ProgressNote // askResult: the questions, for the handler's input_required result
	id      string                       // the invocation, once read
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	after   int64 // the last note sent; the relay's goroutine's until it has ended
}

// stop ends the relay and returns once nothing more will be sent.
func (r *noteRelay) stop() { r.cancel(); r.wg.Wait() }

// finish ends the relay, then sends the notes the call's answer carried
// that it had not sent: the Call collects the invocation, so the relay's
// next read may find it gone.
func (r *noteRelay) finish(notes []*mailboxv1.ProgressNote) {
	r.stop()
	r.asks = askNone // answered: a question left is void
	_ = r.send(r.as, notes)
}

// send sends the notes after the last one sent, in order.
func (r *noteRelay) send(ctx context.Context, notes []*mailboxv1.ProgressNote) error {
	for _, n := range notes {
		if n.GetSeq() <= r.after {
			continue
		}
		r.after = n.GetSeq()
		if n.GetAnswered() != "" {
			continue
		}
		if q := n.GetQuestion(); q != nil {
			switch {
			case r.asks == askNone || r.id == "":
			case r.inputs != nil:
				select {
				case r.inputs <- n:
				default: // more than a call may ask: the mailbox refused the rest
				}
			default:
				r.wg.Go(func() { r.ask(ctx, q) })
			}
			continue
		}
		if err := relayNote(ctx, r.session, r.token, r.logs, n); err != nil {
			return err
		}
	}
	return nil
}

// relayNote sends n on as the client asked: a log message as
// notifications/message, progress to its token.
func relayNote(ctx context.Context, session *mcp.ServerSession, token any, logs bool, n *mailboxv1.ProgressNote) error {
	if session == nil { // a stateless call that only asks
		return nil
	}
	if l := n.GetLog(); l != nil {
		if !logs {
			return nil
		}
		return session.Log(ctx, &mcp.LoggingMessageParams{Level: mcp.LoggingLevel(l.GetLevel()), Logger: l.GetLogger(), Data: json.RawMessage(l.GetData())})
	}
	if token == nil {
		return nil
	}
	p := &mcp.ProgressNotificationParams{ProgressToken: token, Progress: n.GetProgress(), Message: n.GetMessage()}
	if n.Total != nil {
		p.Total = n.GetTotal()
	}
	return session.NotifyProgress(ctx, p)
}
