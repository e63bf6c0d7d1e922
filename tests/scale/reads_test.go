package scale

import (
	"context"
	"sync"
	"testing"

	"github.com/switchboard-run/switchboard/kit/suite/presence"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// reads mirrors the presence bucket's read keys, as the registry does:
// which replica holds each client's read, once held.
type reads struct {
	mu   sync.Mutex
	held map[string]string // client → the replica holding its read
}

// watchReads follows the presence bucket on the NATS at url until the test
// ends.
func watchReads(t *testing.T, url string) *reads {
	t.Helper()
	kv, err := testkit.JetStream(t, url).KeyValue(context.Background(), presence.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	r := &reads{held: map[string]string{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		_ = presence.Watch(ctx, kv, r.apply, func() {})
	}()
	return r
}

func (r *reads) apply(e presence.Event) {
	if e.Client == "" {
		return // a replica's heartbeat
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if e.Read != nil && e.Read.Held {
		r.held[e.Client] = e.Read.Replica
	} else {
		delete(r.held, e.Client)
	}
}

// byReplica counts the held reads of clients, by replica.
func (r *reads) byReplica(clients []string) map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := map[string]int{}
	for _, c := range clients {
		if rep, ok := r.held[c]; ok {
			n[rep]++
		}
	}
	return n
}

// allOn reports whether every client's read is held by replica.
func (r *reads) allOn(clients []string, replica string) bool {
	return r.byReplica(clients)[replica] == len(clients)
}
