package box

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
)

// Of first writes racing on one record one wins and the rest are conflicts,
// whether the stream is replicated or not: NATS says it with other codes.
func TestRacingWritesOfARecordLeaveOneWinnerAtEveryReplication(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a three-node cluster: not in -short")
	}
	ctx := context.Background()
	for _, c := range []struct {
		name     string
		url      string
		replicas int
	}{
		{"R1", testkit.NATS(t).ClientURL(), 1},
		{"R3", testkit.URLs(testkit.NATSCluster(t, 3)), 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			recs, err := declareRecords(ctx, testkit.JetStream(t, c.url), Config{Replicas: c.replicas, MaxSlots: 1000, MaxQueueBytes: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			// Writes racing on one record: a replicated stream refuses those
			// that meet another in flight before it knows who won.
			body := &mailboxv1.StoredInvocation{Poster: "driver", Tool: "echo", Input: "{}"}
			// A new replicated stream answers once it has elected a leader.
			testkit.Eventually(t, "the records' stream to answer a write", 30*time.Second, func() bool {
				_, err := recs.put(ctx, "laptop", "inv-first", stQueued, body, 0, time.Minute)
				return err == nil || errors.Is(err, errConflict)
			})
			for round := range 5 {
				id := fmt.Sprintf("inv-%d", round)
				errs := make(chan error, 8)
				for range cap(errs) {
					go func() {
						_, err := recs.put(ctx, "laptop", id, stQueued, body, 0, time.Minute)
						errs <- err
					}()
				}
				won := 0
				for range cap(errs) {
					switch err := <-errs; {
					case err == nil:
						won++
					case !errors.Is(err, errConflict):
						t.Fatalf("a first write racing others: %v; want it written or a conflict", err)
					}
				}
				if won != 1 {
					t.Fatalf("%d of %d racing first writes of %s won; want one", won, cap(errs), id)
				}
			}
		})
	}
}

// A post made as the leader of its partition's stream goes away waits the
// election out instead of refusing.
func TestAPostWaitsOutItsStreamsElection(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a three-node cluster: not in -short")
	}
	ctx := context.Background()
	nodes := testkit.NATSCluster(t, 3)
	b := openBox(t, testkit.URLs(nodes), 3)
	leader, _ := testkit.StreamLeader(t, nodes, StreamPrefix+strconv.Itoa(partition("laptop")))
	leader.Shutdown()
	post, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	id := inflight.NewID()
	if err := b.Post(post, inflight.Post{ID: id, Client: "laptop", Poster: "driver", Tool: "echo", Input: `{}`}); err != nil {
		t.Fatalf("a post during the election: %v; want it written once a leader is elected", err)
	}
	if r, err := b.recs.get(ctx, "laptop", id); err != nil || r == nil || r.state != stQueued {
		t.Fatalf("its record: %+v %v; want it queued", r, err)
	}
}
