package streams_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/switchboard-run/switchboard/kit/suite/streams"
)

// Watch reports what the bucket holds, then synced, then each change in
// order, deletes included, until its context ends.
func TestWatchReportsTheBucketThenSyncedThenEachChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	kv, err := streams.EnsureKV(ctx, jetStream(t), jetstream.KeyValueConfig{Bucket: "watched"})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b"} {
		if _, err := kv.PutString(ctx, k, "1"); err != nil {
			t.Fatal(err)
		}
	}
	seen := make(chan string, 16)
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- streams.Watch(wctx, kv, func(e jetstream.KeyValueEntry) {
			seen <- fmt.Sprintf("%s %s %s", e.Operation(), e.Key(), e.Value())
		}, func() { seen <- "synced" })
	}()
	next := func() string {
		t.Helper()
		select {
		case s := <-seen:
			return s
		case <-time.After(10 * time.Second):
			t.Fatal("the watch reported nothing within 10s")
			return ""
		}
	}
	for _, want := range []string{"KeyValuePutOp a 1", "KeyValuePutOp b 1", "synced"} {
		if got := next(); got != want {
			t.Fatalf("the watch reported %q, want %q", got, want)
		}
	}
	if _, err := kv.PutString(ctx, "a", "2"); err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"KeyValuePutOp a 2", "KeyValueDeleteOp b "} {
		if got := next(); got != want {
			t.Fatalf("the watch reported %q, want %q", got, want)
		}
	}
	stop()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the watch ended with %v, want its context's error", err)
	}
}
