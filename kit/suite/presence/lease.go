package presence

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/switchboard-run/switchboard/kit/suite/streams"
)

// ErrHeld says another reader holds the client's read.
var ErrHeld = errors.New("another reader holds this client's read")

// Leases writes the reads of one mailbox replica.
type Leases struct {
	kv      jetstream.KeyValue
	replica string
}

// NewLeases returns the leases of replica.
func NewLeases(kv jetstream.KeyValue, replica string) *Leases {
	return &Leases{kv: kv, replica: replica}
}

// Lease is one open read.
type Lease struct {
	l      *Leases
	client string
	mu     sync.Mutex
	read   Read
	rev    uint64
}

// Acquire opens client's read for session: the key is created, or taken at
// its revision when it is this replica's, or when take, shown what another
// replica left there, allows it (that replica died, or gave the client up).
// Otherwise ErrHeld.
func (l *Leases) Acquire(ctx context.Context, client, session string, take func(held *Read) (bool, error)) (*Lease, error) {
	for range 5 { // each lost race to another acquire reads the key again
		held, rev, err := get(ctx, l.kv, client)
		if err != nil {
			return nil, err
		}
		if held != nil && held.Replica != l.replica {
			ok, err := take(held)
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, ErrHeld
			}
		}
		le := &Lease{l: l, client: client, read: Read{Session: session, Replica: l.replica, Opened: time.Now().UTC(), Held: true}}
		data, _ := json.Marshal(le.read)
		if rev == 0 {
			le.rev, err = l.kv.Create(ctx, ReadKey(client), data)
		} else {
			le.rev, err = l.kv.Update(ctx, ReadKey(client), data, rev)
		}
		if streams.Conflict(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return le, nil
	}
	return nil, ErrHeld
}

// Release closes the read: the key keeps the replica and says when the read
// closed, unless another read took it meanwhile.
func (le *Lease) Release(ctx context.Context) error {
	le.mu.Lock()
	defer le.mu.Unlock()
	le.read.Held, le.read.Closed = false, time.Now().UTC()
	data, _ := json.Marshal(le.read)
	rev, err := le.l.kv.Update(ctx, ReadKey(le.client), data, le.rev)
	if err == nil {
		le.rev = rev
	}
	if streams.Conflict(err) {
		return nil // taken by another read: it is not ours to close
	}
	return err
}

// Heartbeat keeps a replica's heartbeat key alive.
type Heartbeat struct {
	stop chan struct{}
	done chan struct{}
	kv   jetstream.KeyValue
	js   jetstream.JetStream
	key  string
	data []byte
	ttl  time.Duration
}

// Beat writes replica's heartbeat (value: what names it for people) and
// renews it every third of ttl until Stop.
func Beat(ctx context.Context, js jetstream.JetStream, kv jetstream.KeyValue, replica, about string, ttl time.Duration) (*Heartbeat, error) {
	h := &Heartbeat{stop: make(chan struct{}), done: make(chan struct{}), kv: kv, js: js, key: ReplicaKey(replica), data: []byte(about), ttl: ttl}
	// The bucket may be new, its stream still electing a leader (a fresh
	// cluster): the first write waits that out; writing again is harmless.
	if err := streams.ThroughElection(ctx, js.Conn(), func(ctx context.Context, _ bool) error { return h.write(ctx) }); err != nil {
		return nil, err
	}
	go h.keep()
	return h, nil
}

// write renews the key with its TTL (a KV put cannot carry one).
func (h *Heartbeat) write(ctx context.Context) error {
	_, err := h.js.Publish(ctx, "$KV."+Bucket+"."+h.key, h.data, jetstream.WithMsgTTL(h.ttl))
	return err
}

func (h *Heartbeat) keep() {
	defer close(h.done)
	every := time.NewTicker(h.ttl / 3)
	defer every.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-every.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), h.ttl/3)
		_ = h.write(ctx) // a missed renewal is retried at the next tick; the TTL covers two
		cancel()
	}
}

// Stop ends the heartbeat and deletes its key: the replica's reads are absent
// at once.
func (h *Heartbeat) Stop() {
	close(h.stop)
	<-h.done
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = h.kv.Delete(ctx, h.key)
}
