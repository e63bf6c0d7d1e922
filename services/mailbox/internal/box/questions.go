package box

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/contract"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
)

// Answer gives the host running an invocation its poster's answer to a
// question it asked: here when this replica holds the invocation, else
// through the replica that does. It is told on the host's read, or
// refused when no read holds the invocation now.
func (b *Box) Answer(ctx context.Context, caller string, a *mailboxv1.Answered) error {
	return b.answerQuestion(ctx, caller, a, false)
}

func (b *Box) answerQuestion(ctx context.Context, caller string, a *mailboxv1.Answered, local bool) error {
	id := a.GetInvocation()
	b.mu.Lock()
	if s := b.slots[id]; s != nil {
		defer b.mu.Unlock()
		if s.poster != caller {
			return inflight.Absent(id)
		}
		asked, already := inflight.Asked(s.notes, a.GetQuestion())
		switch {
		case asked == nil:
			return inflight.NotAsked(id, a.GetQuestion())
		case already:
			return inflight.AnsweredAlready(id, a.GetQuestion())
		case asked.Void(s.handoffs):
			return inflight.Superseded(id, asked, s.handoffs)
		}
		q := b.queues[s.client]
		if s.state == answered || s.cancelled || q == nil || q.reader == nil || !q.handed.has(s) {
			return inflight.NotReading(id)
		}
		q.reader.answered(a)
		b.addNote(s, inflight.Note{Answered: a.GetQuestion(), At: time.Now()})
		return nil
	}
	b.mu.Unlock()
	if home := b.elsewhere(ctx, id, local); home != "" && home != b.name {
		_, err := b.request(ctx, mbxPrefix+home, &ask{Op: "answer", Caller: caller, ID: id, Answer: a})
		return err
	}
	return inflight.Absent(id)
}

// questionFits refuses a question an invocation may not ask now: one asked
// already under its id, or one past contract.MaxQuestions for its run.
func questionFits(notes []inflight.Note, id string, n inflight.Note) error {
	if n.Question == nil {
		return nil
	}
	if q, _ := inflight.Asked(notes, n.Question.ID); q != nil {
		return status.Errorf(codes.AlreadyExists, "report: invocation %q has asked question %q already; a question is asked once", id, n.Question.ID)
	}
	if inflight.AskedBy(notes, n.Question.HandOff) >= contract.MaxQuestions {
		return inflight.TooManyQuestions(id)
	}
	return nil
}

// askedBy is n with its question, if any, marked as asked by hand-off.
func askedBy(n inflight.Note, handOff int32) inflight.Note {
	if n.Question != nil {
		q := *n.Question
		q.HandOff = handOff
		n.Question = &q
	}
	return n
}

// waiting counts the questions of client's runs handed out here that wait
// for their answers (under b.mu).
func (b *Box) waiting(client string) int {
	q := b.queues[client]
	if q == nil {
		return 0
	}
	n := 0
	for s := q.handed.head; s != nil; s = q.handed.at(s).next {
		n += inflight.Waiting(s.notes, s.handoffs)
	}
	return n
}
