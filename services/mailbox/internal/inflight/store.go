package inflight

import (
	"context"
	"time"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
)

// Read is a client's hold on its queue: it is held by a Follow stream for
// as long as the stream lives, or by an Invocations long poll for the
// length of one hold.
type Read interface {
	// Take hands out the invocations waiting, oldest first, as many as fit
	// room, and returns the cancellations to tell the host (none when
	// withCancels is false: a unary read has no way to say them). What
	// does not fit waits for the next Take, not handed out.
	Take(withCancels bool, room *Room) ([]Invocation, []string)
	// Answers returns the posters' answers to the host's questions not yet
	// told it, in order (a stream read tells them; a unary read cannot).
	Answers() []*mailboxv1.Answered
	// Unsent gives back invocations Take handed out that never reached the
	// host (the stream's send failed): their hand-off is uncounted, and
	// they go back to the front of the queue.
	Unsent(invs []Invocation)
	// Wake is signalled when there may be something to Take.
	Wake() <-chan struct{}
	// Ended is closed when the read can go on no longer; the host should
	// read again. Why then says why, as a sentence for the host.
	Ended() <-chan struct{}
	Why() string
	// Requeued counts the invocations handed out earlier without an answer,
	// which this read gets again first.
	Requeued() int
	// Backlogged reports whether invocations that were waiting when the
	// read opened have yet to reach Take: a unary read answers them all.
	Backlogged() bool
	// Close ends the read; what it handed out without an answer goes back
	// to the client's queue under the same id.
	Close()
}

// Store keeps the invocations in flight (package box), with the sentences
// above; one conformance suite (package storetest) holds it to the rules.
type Store interface {
	// Post queues a durable invocation (an Invoke): it survives any one
	// process's death. A reader parked on its client's queue gets it at once.
	Post(ctx context.Context, p Post) error
	// OpenRead opens client's read for session; a second read of the same
	// client, on any replica, is refused unless it is of the same session.
	OpenRead(ctx context.Context, client, session string) (Read, error)
	// Complete stores the capture of an invocation addressed to caller and
	// returns it as stored.
	Complete(ctx context.Context, caller, id string, c Capture) (Capture, error)
	// Collect returns the capture of an invocation posted by caller (taking
	// the slot), or nil while it runs, waiting up to wait for the answer.
	// With a retry key, a Collect with the same key within a minute gets
	// the capture again; any other finds it gone.
	Collect(ctx context.Context, caller, id string, wait time.Duration, retryKey string) (*Capture, error)
	// Await waits until the invocation is answered or ctx ends.
	Await(ctx context.Context, caller, id string) (*Capture, error)
	// Call posts p and awaits its answer until wait ends (the post itself
	// is bounded by ctx), writing nothing durable while its client's host
	// reads: if the replica holding it dies, the call fails in band.
	Call(ctx, wait context.Context, p Post) (*Capture, error)
	// Cancel answers an invocation posted by caller as cancelled and
	// removes it; with keep, the slot stays answered with the cancelled
	// capture (phase cancelled) until it expires, for Status to read and
	// Capture to collect once.
	Cancel(ctx context.Context, caller, id, reason string, keep bool) (Capture, error)
	// Report keeps a progress note on an invocation addressed to caller and
	// wakes its poster's Status waits, on every replica; it returns the
	// note's seq and what the slot's notes hold now (NotesBytes). One
	// answered or cancelled is refused (NotRunning).
	Report(ctx context.Context, caller, id string, n Note) (seq int64, held int, err error)
	// Status reads an invocation posted by caller without taking it: its
	// phase, its notes after seq `after` and, once answered, its capture.
	// With wait > 0 it waits that long (bounded by ctx) for a note after
	// `after` or the answer, returning as soon as one exists.
	Status(ctx context.Context, caller, id string, after int64, wait time.Duration) (State, error)
	// Answer gives the host reading an invocation posted by caller the
	// poster's answer to a question it asked (a note), on any replica;
	// refused when no read holds the invocation (NotReading) or the
	// question is not among its notes (NotAsked).
	Answer(ctx context.Context, caller string, a *mailboxv1.Answered) error
	// Close ends every read and refuses new acts.
	Close()
}
