package presence

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/switchboard-run/switchboard/kit/natsconn"
	"github.com/switchboard-run/switchboard/kit/streams"
)

// Leases takes and keeps read leases for one mailbox replica.
type Leases struct {
	js      jetstream.JetStream
	kv      jetstream.KeyValue
	subject string // $KV.<bucket>. — where a key with a TTL is written
	ttl     time.Duration
	replica string
}

// NewLeases returns the leases of replica, each living ttl past its last
// refresh.
func NewLeases(js jetstream.JetStream, kv jetstream.KeyValue, replica string, ttl time.Duration) *Leases {
	return &Leases{js: js, kv: kv, subject: "$KV." + Bucket + ".", ttl: ttl, replica: replica}
}

// ErrHeld says another reader holds the client's read.
var ErrHeld = errors.New("another reader holds this client's read")

// Lease is one held read. Lost is closed when it is lost: taken over by a
// read of the same session elsewhere, or not refreshed in time because
// NATS was out of reach; the read must end then.
type Lease struct {
	l       *Leases
	client  string
	data    []byte // the read key's value, written again at each refresh
	mu      sync.Mutex
	rev     uint64
	lost    chan struct{}
	lostErr error
	once    sync.Once
	release sync.Once
	stop    chan struct{}
	wg      sync.WaitGroup
}

// Acquire takes client's read for session. A key held by the same session
// (a host redialing after its replica died) is taken over; one held by
// another session is ErrHeld.
func (l *Leases) Acquire(ctx context.Context, client, session string) (*Lease, error) {
	data, _ := json.Marshal(Read{Session: session, Replica: l.replica, Opened: time.Now().UTC()})
	rev, err := l.kv.Create(ctx, readKey(client), data, jetstream.KeyTTL(l.ttl))
	if streams.Conflict(err) {
		rev, err = l.takeOver(ctx, client, session, data)
	}
	if err != nil {
		return nil, err
	}
	l.touch(client)
	lease := &Lease{l: l, client: client, data: data, rev: rev, lost: make(chan struct{}), stop: make(chan struct{})}
	lease.wg.Add(1)
	go lease.keep()
	return lease, nil
}

func (l *Leases) takeOver(ctx context.Context, client, session string, data []byte) (uint64, error) {
	e, err := l.kv.Get(ctx, readKey(client))
	if errors.Is(err, jetstream.ErrKeyNotFound) { // released meanwhile
		return l.kv.Create(ctx, readKey(client), data, jetstream.KeyTTL(l.ttl))
	}
	if err != nil {
		return 0, err
	}
	var held Read
	if json.Unmarshal(e.Value(), &held) != nil || session == "" || held.Session != session {
		return 0, ErrHeld
	}
	return l.put(ctx, client, data, e.Revision())
}

// put writes the read key at revision rev with the lease's TTL.
func (l *Leases) put(ctx context.Context, client string, data []byte, rev uint64) (uint64, error) {
	m := nats.NewMsg(l.subject + readKey(client))
	m.Data = data
	var ack *jetstream.PubAck
	err := natsconn.Request(ctx, func(ctx context.Context) (err error) {
		ack, err = l.js.PublishMsg(ctx, m, jetstream.WithExpectLastSequencePerSubject(rev), jetstream.WithMsgTTL(l.ttl))
		return err
	})
	if err != nil {
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
			return 0, ErrHeld
		}
		return 0, err
	}
	return ack.Sequence, nil
}

// touch records that client's read opened or closed now. Best effort: a
// missed last_seen is a worse display, not a wrong answer.
func (l *Leases) touch(client string) {
	at, _ := time.Now().UTC().MarshalText()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = l.kv.Put(ctx, seenKey(client), at)
}

// Hold marks the read open at the mailbox: from now on the registry shows
// the client present.
func (le *Lease) Hold(ctx context.Context) error {
	le.mu.Lock()
	defer le.mu.Unlock()
	var r Read
	if err := json.Unmarshal(le.data, &r); err != nil {
		return err
	}
	r.Held = true
	data, _ := json.Marshal(r)
	rev, err := le.l.put(ctx, le.client, data, le.rev)
	if err != nil {
		return err
	}
	le.data, le.rev = data, rev
	return nil
}

// Lost is closed when the lease is lost; Err then says why.
func (le *Lease) Lost() <-chan struct{} { return le.lost }

// Err says why the lease was lost (nil while it is held).
func (le *Lease) Err() error {
	le.mu.Lock()
	defer le.mu.Unlock()
	return le.lostErr
}

func (le *Lease) lose(err error) {
	le.once.Do(func() {
		le.mu.Lock()
		le.lostErr = err
		le.mu.Unlock()
		close(le.lost)
	})
}

// keep refreshes the key a third of a TTL at a time. A refresh refused
// because the key moved on is a takeover; failing to refresh for a whole
// TTL means another reader may hold it now.
func (le *Lease) keep() {
	defer le.wg.Done()
	every := le.l.ttl / 3
	t := time.NewTicker(every)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-le.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), every)
		le.mu.Lock()
		newRev, err := le.l.put(ctx, le.client, le.data, le.rev)
		if err == nil {
			le.rev = newRev
		}
		le.mu.Unlock()
		cancel()
		switch {
		case err == nil:
			last = time.Now()
		case errors.Is(err, ErrHeld):
			le.lose(errors.New("the read was taken over by a read of the same session on another mailbox replica"))
			return
		case time.Since(last) > le.l.ttl:
			le.lose(errors.New("the read's lease could not be refreshed in time: NATS is out of reach"))
			return
		}
	}
}

// Release gives the read up: the key is deleted (unless it moved on) and
// last_seen recorded. A second call does nothing.
func (le *Lease) Release() {
	le.release.Do(le.giveUp)
}

func (le *Lease) giveUp() {
	close(le.stop)
	le.wg.Wait()
	le.mu.Lock()
	rev := le.rev
	le.mu.Unlock()
	select {
	case <-le.lost:
	default:
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = le.l.kv.Delete(ctx, readKey(le.client), jetstream.LastRevision(rev))
		cancel()
	}
	le.l.touch(le.client)
	le.lose(nil)
}
