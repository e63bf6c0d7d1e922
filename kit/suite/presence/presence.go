// Package presence is where the suite records which clients hold a read of
// their queue: one key-value bucket that the mailbox writes and the registry
// watches (docs/architecture.md, "Where state lives").
//
// Keys: read.<client> is the client's read: the mailbox replica that holds
// it, its session, and whether it is open now; it is written when a read
// opens and when it closes, never in between. replica.<name> is a mailbox
// replica's heartbeat, with a per-key TTL its replica renews: a read is
// present only while it is open and its replica's heartbeat lives, so a
// parked host costs no write after its read opens.
package presence

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/switchboard-run/switchboard/kit/suite/streams"
)

// Bucket is the key-value bucket of presence.
const Bucket = "sb_presence"

// DefaultTTL is how long a replica's heartbeat outlives the replica.
const DefaultTTL = 15 * time.Second

const (
	readPrefix    = "read."
	replicaPrefix = "replica."
)

// Read is one client's read as its key holds it.
type Read struct {
	// Session is the session the host named for the read (may be empty).
	Session string `json:"session,omitempty"`
	// Replica names the mailbox process holding it (and the client's queue).
	Replica string `json:"replica"`
	// Opened is when the read last opened, and Closed when it last closed.
	Opened time.Time `json:"opened"`
	Closed time.Time `json:"closed,omitzero"`
	// Held is set while the read is open.
	Held bool `json:"held,omitempty"`
}

// Seen is when the client was last heard of: now while its read is open.
func (r *Read) Seen() time.Time {
	if r.Held || r.Closed.Before(r.Opened) {
		return r.Opened
	}
	return r.Closed
}

// Declare returns the bucket, creating it when missing.
func Declare(ctx context.Context, js jetstream.JetStream, replicas int) (jetstream.KeyValue, error) {
	return streams.EnsureKV(ctx, js, jetstream.KeyValueConfig{
		Bucket:      Bucket,
		Description: "Switchboard's presence: which clients hold a read of their queue, on which mailbox replica, and which replicas live",
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
		// A heartbeat that times out leaves a marker, so watchers hear the
		// replica died; the marker itself goes a minute later.
		LimitMarkerTTL: time.Minute,
	})
}

// ReadKey and ReplicaKey name a client's read and a replica's heartbeat.
func ReadKey(client string) string     { return readPrefix + client }
func ReplicaKey(replica string) string { return replicaPrefix + replica }

// Event is one change a watcher hears: a client's read (Read nil: the key
// is gone), or a replica's heartbeat starting or ending.
type Event struct {
	Client  string
	Read    *Read
	Replica string
	Alive   bool
	// At is when the change was stored.
	At time.Time
}

// Watch calls on for every key of the bucket, first as it stands (then
// synced once), then for every change, until ctx ends or the watch fails.
func Watch(ctx context.Context, kv jetstream.KeyValue, on func(Event), synced func()) error {
	return streams.Watch(ctx, kv, func(e jetstream.KeyValueEntry) {
		if ev, ok := decode(e); ok {
			on(ev)
		}
	}, synced)
}

// decode reads one entry; keys it does not know are skipped.
func decode(e jetstream.KeyValueEntry) (Event, bool) {
	put := e.Operation() == jetstream.KeyValuePut
	if r, ok := strings.CutPrefix(e.Key(), replicaPrefix); ok {
		return Event{Replica: r, Alive: put, At: e.Created()}, true
	}
	client, ok := strings.CutPrefix(e.Key(), readPrefix)
	if !ok {
		return Event{}, false
	}
	ev := Event{Client: client, At: e.Created()}
	if put {
		ev.Read = &Read{}
		if json.Unmarshal(e.Value(), ev.Read) != nil {
			return Event{}, false
		}
	}
	return ev, true
}

// Current returns client's read when it is open on a live replica, or nil.
func Current(ctx context.Context, kv jetstream.KeyValue, client string) (*Read, error) {
	r, _, err := get(ctx, kv, client)
	if err != nil || r == nil || !r.Held {
		return nil, err
	}
	alive, err := Alive(ctx, kv, r.Replica)
	if err != nil || !alive {
		return nil, err
	}
	return r, nil
}

// Alive reports whether replica's heartbeat lives.
func Alive(ctx context.Context, kv jetstream.KeyValue, replica string) (bool, error) {
	_, err := kv.Get(ctx, ReplicaKey(replica))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, nil
	}
	return err == nil, err
}

// get returns client's read key and its revision (nil, 0 when none).
func get(ctx context.Context, kv jetstream.KeyValue, client string) (*Read, uint64, error) {
	e, err := kv.Get(ctx, ReadKey(client))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	var r Read
	if err := json.Unmarshal(e.Value(), &r); err != nil {
		return nil, 0, fmt.Errorf("the read key of %q is not a read: %w", client, err)
	}
	return &r, e.Revision(), nil
}
