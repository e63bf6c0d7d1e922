package jsbox

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/switchboard-run/switchboard/kit/natsconn"
)

// Each client's queue is read through a durable consumer of its own
// (c-<client>), declared by the replicas as their reads open.

// readyConsumer returns client's consumer and how it stands, declaring it
// again when the one this process declared is gone: JetStream forgets a
// consumer after its inactivity threshold, and a NATS whose every node
// restarted has forgotten them all (their state is kept in memory).
func (b *Box) readyConsumer(ctx context.Context, client string) (jetstream.Consumer, *jetstream.ConsumerInfo, error) {
	for again := false; ; again = true {
		cons, err := b.consumer(ctx, client)
		if err != nil {
			return nil, nil, err
		}
		info, err := consumerInfo(ctx, cons)
		if errors.Is(err, jetstream.ErrConsumerNotFound) && !again {
			b.mu.Lock()
			if b.consumers[client] == cons {
				delete(b.consumers, client)
			}
			b.mu.Unlock()
			continue
		}
		if err != nil {
			return nil, nil, unavailable("opening the read", err)
		}
		return cons, info, nil
	}
}

// consumerInfo asks JetStream how cons stands.
func consumerInfo(ctx context.Context, cons jetstream.Consumer) (info *jetstream.ConsumerInfo, err error) {
	err = natsconn.Request(ctx, func(ctx context.Context) (err error) { info, err = cons.Info(ctx); return err })
	return info, err
}

// minConsumerIdle is the least time a consumer without reads is kept. An
// open read's pulls leave gaps between one pull request and the next, a
// second or more on a loaded cluster, and JetStream forgets a consumer with
// no pull waiting for its inactivity threshold: with a TTL of a second or
// two, a read could find its consumer forgotten under it and deliver
// nothing until it noticed, a heartbeat later.
const minConsumerIdle = time.Minute

// consumer declares (once per process) the durable consumer of client's
// subject. Its AckWait is the lease, MaxDeliver unbounded (handOff counts
// the hand-offs, less the deliveries given back unsent, and answers the
// one past the cap in doubt, not handing it out), and it
// is forgotten after a TTL without reads (a minute at least), like the
// invocations it held.
//
// Its state (what was delivered, what waits for an ack) is kept in the
// NATS servers' memory, not on their disks: on a file store JetStream
// rewrites a consumer's state file up to ten times a second, and with a
// thousand hosts reading, each delivery to a different consumer, that was
// a file written per invocation and most of the server's CPU (docs/bench.md).
// Nothing is lost with it: the queue stream keeps every invocation until
// it is answered, the slot keeps its hand-off count, and a consumer
// forgotten with its state (every node of a NATS restarted) is declared
// again by the next read and delivers again what was handed and not
// answered, as a lease running out would. A cluster replicates the state
// between its nodes as before.
func (b *Box) consumer(ctx context.Context, client string) (jetstream.Consumer, error) {
	b.mu.Lock()
	c := b.consumers[client]
	b.mu.Unlock()
	if c != nil {
		return c, nil
	}
	cfg := jetstream.ConsumerConfig{
		Durable:           consumerName(client),
		FilterSubject:     queuePrefix + client,
		AckPolicy:         jetstream.AckExplicitPolicy,
		AckWait:           b.cfg.Lease,
		MaxDeliver:        -1,
		MaxAckPending:     max(b.cfg.MaxQueued, 1),
		InactiveThreshold: max(b.cfg.TTL, minConsumerIdle),
		PriorityPolicy:    jetstream.PriorityPolicyPinned,
		PriorityGroups:    []string{readerGroup},
		PinnedTTL:         b.cfg.Lease,
		MemoryStorage:     true,
	}
	declare := func() error {
		return natsconn.Request(ctx, func(ctx context.Context) (err error) {
			c, err = b.queue.CreateOrUpdateConsumer(ctx, cfg)
			return err
		})
	}
	err := declare()
	var apiErr *jetstream.APIError
	// Only a refusal from the server may be about the storage: a request
	// that got no answer is not asked again.
	if errors.As(err, &apiErr) && apiErr.ErrorCode != jetstream.JSErrCodeMaximumConsumersLimit && b.keepsItsStorage(ctx, &cfg) {
		err = declare()
	}
	if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeMaximumConsumersLimit {
		return nil, status.Errorf(codes.ResourceExhausted,
			"invocations: the mailbox keeps queues for at most %d clients at once (--max-clients), and has as many; a queue unread for --ttl is forgotten", b.cfg.MaxClients)
	}
	if err != nil {
		return nil, unavailable("opening the read", err)
	}
	b.mu.Lock()
	b.consumers[client] = c
	b.mu.Unlock()
	return c, nil
}

// unpin frees client's consumer for the next pull request without a pin:
// pull requests still pinned to an earlier read are refused from now on.
// Best effort: at worst the pin times out after a lease (PinnedTTL).
func (b *Box) unpin(ctx context.Context, client string) {
	err := natsconn.Request(ctx, func(ctx context.Context) error { return b.queue.UnpinConsumer(ctx, consumerName(client), readerGroup) })
	if err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		b.log.Debug("unpinning the consumer of a read", "client", client, "err", err)
	}
}

func consumerName(client string) string { return "c-" + client }

// keepsItsStorage sets cfg to the storage of the consumer already declared
// under its name when that differs, and reports whether it did: a
// consumer an earlier version declared keeps its state on disk, and the
// server changes no consumer's storage, so it is used as it is until
// JetStream forgets it (its inactivity threshold) and is declared in
// memory then.
func (b *Box) keepsItsStorage(ctx context.Context, cfg *jetstream.ConsumerConfig) bool {
	var have jetstream.Consumer
	err := natsconn.Request(ctx, func(ctx context.Context) (err error) {
		have, err = b.queue.Consumer(ctx, cfg.Durable)
		return err
	})
	if err != nil || have.CachedInfo().Config.MemoryStorage == cfg.MemoryStorage {
		return false
	}
	cfg.MemoryStorage = have.CachedInfo().Config.MemoryStorage
	return true
}
