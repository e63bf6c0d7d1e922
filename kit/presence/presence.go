// Package presence is where the suite records which clients hold a read of
// their queue: one key-value bucket that the mailbox writes and the registry
// watches. A client's read key is also its read lease — one reader per
// client across every mailbox replica — kept alive by the replica that
// serves the read, so a client whose replica dies is shown absent within a
// lease's time, and present again as soon as it reads elsewhere.
//
// Keys: read.<client> holds the read (session, replica, when it opened)
// with a per-key TTL; seen.<client> holds when a read last opened or
// closed, and never expires.
package presence

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/switchboard-run/switchboard/kit/streams"
)

// Bucket is the key-value bucket of presence.
const Bucket = "sb_presence"

// DefaultTTL is how long a read key outlives the last word from the
// replica holding it.
const DefaultTTL = 15 * time.Second

const (
	readPrefix = "read."
	seenPrefix = "seen."
)

// Read is one client's read as its key holds it.
type Read struct {
	// Session is the session the host named for the read (may be empty).
	Session string `json:"session,omitempty"`
	// Replica names the mailbox process serving it.
	Replica string `json:"replica"`
	// Opened is when the read opened.
	Opened time.Time `json:"opened"`
	// Held is set once the read is open at the mailbox: a client is
	// present only then, so that a caller who sees it present knows its
	// read is being served.
	Held bool `json:"held,omitempty"`
}

// Declare returns the bucket, creating it when missing.
func Declare(ctx context.Context, js jetstream.JetStream, replicas int) (jetstream.KeyValue, error) {
	return streams.EnsureKV(ctx, js, jetstream.KeyValueConfig{
		Bucket:      Bucket,
		Description: "Switchboard's presence: which clients hold a read of their queue, and when one last did",
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
		// A read key that times out leaves a marker, so watchers hear the
		// client went absent; the marker itself goes a minute later.
		LimitMarkerTTL: time.Minute,
	})
}

func readKey(client string) string { return readPrefix + client }
func seenKey(client string) string { return seenPrefix + client }

// Event is one change a watcher hears.
type Event struct {
	Client string
	// Read is the read now held, or nil when the client holds none.
	Read *Read
	// Seen is when the client last opened or closed a read (zero: unknown).
	Seen time.Time
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
	key := e.Key()
	deleted := e.Operation() != jetstream.KeyValuePut
	switch {
	case len(key) > len(readPrefix) && key[:len(readPrefix)] == readPrefix:
		ev := Event{Client: key[len(readPrefix):], At: e.Created()}
		if !deleted {
			var r Read
			if json.Unmarshal(e.Value(), &r) != nil {
				return Event{}, false
			}
			ev.Read = &r
		}
		return ev, true
	case len(key) > len(seenPrefix) && key[:len(seenPrefix)] == seenPrefix && !deleted:
		var at time.Time
		if at.UnmarshalText(e.Value()) != nil {
			return Event{}, false
		}
		return Event{Client: key[len(seenPrefix):], Seen: at, At: e.Created()}, true
	}
	return Event{}, false
}

// Current returns client's read as stored now, or nil.
func Current(ctx context.Context, kv jetstream.KeyValue, client string) (*Read, error) {
	e, err := kv.Get(ctx, readKey(client))
	if err != nil {
		if err == jetstream.ErrKeyNotFound {
			return nil, nil
		}
		return nil, err
	}
	var r Read
	if err := json.Unmarshal(e.Value(), &r); err != nil {
		return nil, fmt.Errorf("the read key of %q is not a read: %w", client, err)
	}
	return &r, nil
}
