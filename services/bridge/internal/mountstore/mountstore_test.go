package mountstore

import (
	"context"
	"errors"
	"testing"
	"time"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

func open(t *testing.T) *Store {
	t.Helper()
	js := testkit.JetStream(t, "", testkit.NATS(t).InProcess())
	s, err := Open(context.Background(), js, 1)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A lease is one replica's: a second Create is refused, a renewal at a
// revision the lease has left is refused, a released lease is free at
// once, and one nobody renews lapses by itself.
func TestALeaseIsCompareAndSet(t *testing.T) {
	t.Parallel()
	s, ctx := open(t), context.Background()
	rev, err := s.Acquire(ctx, "solo", "a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acquire(ctx, "solo", "b"); !errors.Is(err, ErrHeld) {
		t.Fatalf("a second Acquire = %v; want ErrHeld", err)
	}
	next, err := s.Renew(ctx, "solo", "a", rev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Renew(ctx, "solo", "b", rev); !errors.Is(err, ErrHeld) {
		t.Fatalf("a renewal at a stale revision = %v; want ErrHeld", err)
	}
	if h, _ := s.Holder(ctx, "solo"); h != "a" {
		t.Fatalf("Holder = %q; want a", h)
	}
	s.Release(ctx, "solo", next)
	rev, err = s.Acquire(ctx, "solo", "b")
	if err != nil {
		t.Fatalf("Acquire after a release = %v", err)
	}
	start := time.Now()
	testkit.Eventually(t, "the lease to lapse", 3*LeaseTTL, func() bool {
		_, err := s.Acquire(ctx, "solo", "c")
		return err == nil
	})
	t.Logf("an unrenewed lease was free again %v after its last write", time.Since(start).Round(time.Millisecond))
	if _, err := s.Renew(ctx, "solo", "b", rev); !errors.Is(err, ErrHeld) {
		t.Fatalf("renewing a lapsed lease another took = %v; want ErrHeld", err)
	}
}

// A stored mount reads back as written; a watch hears it, then its removal.
func TestMountsAreStoredAndWatched(t *testing.T) {
	t.Parallel()
	s, ctx := open(t), context.Background()
	cfg := &bridgev1.ServerConfig{Exclusive: true, Transport: &bridgev1.ServerConfig_Http{Http: &bridgev1.HttpTransport{Url: "http://127.0.0.1:1/mcp"}}}
	rev, err := s.Put(ctx, "web", cfg)
	if err != nil {
		t.Fatal(err)
	}
	got, at, err := s.Get(ctx, "web")
	if err != nil || at != rev || !got.GetExclusive() || got.GetHttp().GetUrl() != cfg.GetHttp().GetUrl() {
		t.Fatalf("Get = %v at %d, %v; want the config at %d", got, at, err, rev)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	changes := make(chan Change, 4)
	synced := make(chan map[string]bool, 1)
	go func() { _ = s.Watch(wctx, func(c Change) { changes <- c }, func(p map[string]bool) { synced <- p }) }()
	if c := <-changes; c.Client != "web" || c.Config == nil || c.Rev != rev {
		t.Fatalf("first change = %+v", c)
	}
	if p := <-synced; !p["web"] {
		t.Fatalf("synced with %v; want web present", p)
	}
	if ok, err := s.Delete(ctx, "web"); !ok || err != nil {
		t.Fatalf("Delete = %v, %v", ok, err)
	}
	if c := <-changes; c.Client != "web" || c.Config != nil || c.Rev <= rev {
		t.Fatalf("after Delete, change = %+v; want a removal after %d", c, rev)
	}
	if ok, err := s.Delete(ctx, "web"); ok || err != nil {
		t.Fatalf("a second Delete = %v, %v; want false", ok, err)
	}
}
