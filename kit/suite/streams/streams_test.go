package streams_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/switchboard-run/switchboard/kit/suite/natsserver"
	"github.com/switchboard-run/switchboard/kit/suite/streams"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

func jetStream(t *testing.T) jetstream.JetStream {
	t.Helper()
	s, err := natsserver.Start(natsserver.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	return testkit.JetStream(t, "", s.InProcess())
}

func TestAStreamIsCreatedOnceAndItsLimitsFollowTheConfig(t *testing.T) {
	t.Parallel()
	js, ctx := jetStream(t), context.Background()
	cfg := jetstream.StreamConfig{Name: "Q", Subjects: []string{"q.>"}, Retention: jetstream.WorkQueuePolicy, MaxAge: time.Hour}
	if _, err := streams.Ensure(ctx, js, cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := streams.Ensure(ctx, js, cfg); err != nil {
		t.Fatalf("declaring the same stream again: %v", err)
	}
	cfg.MaxAge = 2 * time.Hour
	s, err := streams.Ensure(ctx, js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.CachedInfo().Config.MaxAge; got != 2*time.Hour {
		t.Fatalf("max age after a changed declaration = %v, want 2h", got)
	}
	// Made with JetStream's default duplicate window (as before a version
	// set one), the stream takes the window a declaration names.
	if got := s.CachedInfo().Config.Duplicates; got != 2*time.Minute {
		t.Fatalf("default duplicate window = %v, want JetStream's 2m", got)
	}
	cfg.Duplicates = 30 * time.Second
	if s, err = streams.Ensure(ctx, js, cfg); err != nil {
		t.Fatal(err)
	}
	if got := s.CachedInfo().Config.Duplicates; got != 30*time.Second {
		t.Fatalf("duplicate window after a changed declaration = %v, want 30s", got)
	}
}

func TestAStreamSomeoneElseMadeIsRefusedByName(t *testing.T) {
	t.Parallel()
	js, ctx := jetStream(t), context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "Q", Subjects: []string{"q.>"}}); err != nil {
		t.Fatal(err)
	}
	_, err := streams.Ensure(ctx, js, jetstream.StreamConfig{Name: "Q", Subjects: []string{"q.>"}, Retention: jetstream.WorkQueuePolicy})
	want := `the JetStream stream "Q" exists with no Switchboard layout mark; it was made by something other than this version of Switchboard, so it is not reused`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want it to say %q", err, want)
	}
	// Ours, but another retention: named.
	if _, err := streams.Ensure(ctx, js, jetstream.StreamConfig{Name: "R", Subjects: []string{"r.>"}}); err != nil {
		t.Fatal(err)
	}
	_, err = streams.Ensure(ctx, js, jetstream.StreamConfig{Name: "R", Subjects: []string{"r.>"}, Retention: jetstream.WorkQueuePolicy})
	if err == nil || !strings.Contains(err.Error(), "retention Limits, where this build needs WorkQueue") {
		t.Fatalf("err = %v, want the retention named", err)
	}
}

func TestABucketIsDeclaredLikeAStream(t *testing.T) {
	t.Parallel()
	js, ctx := jetStream(t), context.Background()
	cfg := jetstream.KeyValueConfig{Bucket: "b", TTL: time.Minute, LimitMarkerTTL: time.Minute}
	if _, err := streams.EnsureKV(ctx, js, cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := streams.EnsureKV(ctx, js, cfg); err != nil {
		t.Fatalf("declaring the same bucket again: %v", err)
	}
	st, err := js.Stream(ctx, "KV_b")
	if err != nil {
		t.Fatal(err)
	}
	if !st.CachedInfo().Config.AllowDirect {
		t.Fatal("a bucket of one replica reads through its leader; it has nobody to lag")
	}
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "foreign"}); err != nil {
		t.Fatal(err)
	}
	_, err = streams.EnsureKV(ctx, js, jetstream.KeyValueConfig{Bucket: "foreign"})
	if err == nil || !strings.Contains(err.Error(), `the key-value bucket "foreign" exists with no Switchboard layout mark`) {
		t.Fatalf("err = %v", err)
	}
}

func TestAThreeNodeClusterKeepsThreeCopies(t *testing.T) {
	t.Parallel()
	nodes, err := natsserver.StartCluster(t.TempDir(), "c", 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			n.Shutdown()
		}
	})
	nc, err := nats.Connect(nodes[0].ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	s, err := streams.Ensure(context.Background(), js, jetstream.StreamConfig{Name: "Q", Subjects: []string{"q.>"}, Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(s.CachedInfo().Cluster.Replicas); n != 2 {
		t.Fatalf("the stream has %d replicas besides its leader, want 2", n)
	}
	if _, err := streams.EnsureKV(context.Background(), js, jetstream.KeyValueConfig{Bucket: "b", Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	kvs, err := js.Stream(context.Background(), "KV_b")
	if err != nil {
		t.Fatal(err)
	}
	if kvs.CachedInfo().Config.AllowDirect {
		t.Fatal("a bucket of three replicas allows direct reads, which a replica behind its leader may serve")
	}
}

// A bucket in three copies, with the node that leads it lost: a read right
// after a write sees the write on every client, wherever it is connected.
// (Reads answered by any copy miss some: a copy lags for a while.)
func TestABucketInThreeCopiesReadsItsOwnWritesAfterANodeIsLost(t *testing.T) {
	t.Parallel()
	nodes := testkit.NATSCluster(t, 3)
	ctx := context.Background()
	connect := func() jetstream.JetStream {
		nc, err := nats.Connect(testkit.URLs(nodes))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		js, _ := jetstream.New(nc)
		return js
	}
	js := connect()
	cfg := jetstream.KeyValueConfig{Bucket: "b", Replicas: 3}
	if _, err := streams.EnsureKV(ctx, js, cfg); err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(ctx, "KV_b")
	if err != nil {
		t.Fatal(err)
	}
	leader := s.CachedInfo().Cluster.Leader
	var wg sync.WaitGroup
	var writes, missed atomic.Int64
	for w := range 8 {
		kv, err := streams.EnsureKV(ctx, connect(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for i := range 300 {
				if w == 0 && i == 50 {
					for _, n := range nodes {
						if n.Name() == leader {
							go n.Shutdown()
						}
					}
				}
				key := fmt.Sprintf("k%d-%d", w, i)
				if _, err := kv.Create(ctx, key, []byte("v")); err != nil {
					continue // refused while the bucket has no leader: nothing written
				}
				writes.Add(1)
				if _, err := kv.Get(ctx, key); errors.Is(err, jetstream.ErrKeyNotFound) {
					missed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if missed.Load() > 0 || writes.Load() == 0 {
		t.Fatalf("%d of %d reads right after their write did not find it", missed.Load(), writes.Load())
	}
}

// A write that lost a race is a Conflict whether the bucket has one copy or
// three (JetStream says it with different codes), and nothing else is.
func TestConflictIsTheSameForOneCopyAndThree(t *testing.T) {
	t.Parallel()
	nodes := testkit.NATSCluster(t, 3)
	nc, err := nats.Connect(testkit.URLs(nodes))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	three, _ := jetstream.New(nc)
	ctx := context.Background()
	for name, c := range map[string]struct {
		js       jetstream.JetStream
		replicas int
	}{"one copy": {jetStream(t), 1}, "three copies": {three, 3}} {
		kv, err := streams.EnsureKV(ctx, c.js, jetstream.KeyValueConfig{Bucket: "conflict", Replicas: c.replicas})
		if err != nil {
			t.Fatal(err)
		}
		// A new bucket of three copies answers once its leader is elected
		// and its interest has reached every node: until then a write
		// meets no responder, and is tried again.
		var rev uint64
		testkit.Await(t, name+": the bucket's first write", 30*time.Second, func() error {
			var err error
			if rev, err = kv.Put(ctx, "k", []byte("a")); err != nil && !streams.Electing(err) {
				t.Fatal(err)
			}
			return err
		})
		if _, err := kv.Update(ctx, "k", []byte("b"), rev); err != nil {
			t.Fatal(err)
		}
		_, createErr := kv.Create(ctx, "k", []byte("c"))
		_, updateErr := kv.Update(ctx, "k", []byte("c"), rev)
		purgeErr := kv.Purge(ctx, "k", jetstream.LastRevision(rev))
		for what, err := range map[string]error{"Create of a key that exists": createErr, "Update at an old revision": updateErr, "Purge at an old revision": purgeErr} {
			if !streams.Conflict(err) {
				t.Errorf("%s, %s: %v is not a Conflict", name, what, err)
			}
		}
		if _, err := kv.Get(ctx, "missing"); streams.Conflict(err) {
			t.Errorf("%s: a missing key is a Conflict", name)
		}
	}
}
