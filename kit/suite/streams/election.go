package streams

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/switchboard-run/switchboard/kit/lib/retry"
	"github.com/switchboard-run/switchboard/kit/suite/natsconn"
)

// ElectionWait bounds how long a write waits out a leader election when
// its caller set no deadline of its own: an election takes seconds.
const ElectionWait = 15 * time.Second

// election spaces the tries of a write meeting an election: short.
var election = retry.Policy{Base: 100 * time.Millisecond, Max: time.Second, Multiplier: 2, Jitter: 0.2}

// Electing reports whether err is JetStream not answering for a moment, as
// while a stream elects its leader: worth another try.
func Electing(err error) bool {
	return errors.Is(err, natsconn.ErrNoAnswer) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrTimeout)
}

// ThroughElection runs write, each try bounded by natsconn.RequestTimeout,
// and tries again while JetStream elects a leader, within ctx less a margin
// to refuse with a sentence before the caller gives up (ElectionWait
// without a deadline). A try failing while nc is not connected is NATS
// out of reach, not an election: that is refused at once. retried tells
// write that an earlier try may have been stored without its answer
// arriving.
func ThroughElection(ctx context.Context, nc *nats.Conn, write func(ctx context.Context, retried bool) error) error {
	var cancel context.CancelFunc
	if d, ok := ctx.Deadline(); ok {
		ctx, cancel = context.WithDeadline(ctx, d.Add(-min(time.Until(d)/10, 500*time.Millisecond)))
	} else {
		ctx, cancel = context.WithTimeout(ctx, ElectionWait)
	}
	defer cancel()
	tried := false
	electing := func(err error) bool { return Electing(err) && nc.IsConnected() }
	return retry.Loop{Policy: election, Retryable: electing}.Do(ctx, func(ctx context.Context) error {
		err := natsconn.Request(ctx, func(ctx context.Context) error { return write(ctx, tried) })
		tried = true
		return err
	})
}
