package limits

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/services/gateway/internal/httperr"
)

func driver(name string) identity.Identity {
	return identity.Identity{Name: name, Grade: identity.Driver}
}

// clock is a fake time for the token buckets: the refill is the library's,
// and the test moves time on instead of waiting for it.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newAt(cfg Config) (*Limiter, *clock) {
	l := New(cfg)
	c := &clock{t: time.Unix(1_000_000, 0)}
	l.now = c.now
	return l, c
}

func refusal(t *testing.T, err error) *Refusal {
	t.Helper()
	var r *Refusal
	if !errors.As(err, &r) {
		t.Fatalf("want a refusal, got %v", err)
	}
	if st, _ := httperr.From(err); st != http.StatusTooManyRequests {
		t.Fatalf("status %d", st)
	}
	return r
}

func TestRateRefusesPastTheBurstAndRefills(t *testing.T) {
	l, c := newAt(Config{Grades: map[identity.Grade]Limit{identity.Driver: {Rate: 0.5, Burst: 2}}})
	for range 2 {
		release, err := l.Acquire(driver("alice"))
		if err != nil {
			t.Fatal(err)
		}
		release()
	}
	_, err := l.Acquire(driver("alice"))
	r := refusal(t, err)
	if r.RetryAfter != 2*time.Second || r.Error() != `"alice" made more than 0.5 calls per second (bursts of 2), the rate a driver may call at; try again in 2 s` {
		t.Fatalf("refusal %q after %v", r.Error(), r.RetryAfter)
	}
	// Another identity has its own bucket; an admin has no limit.
	if _, err := l.Acquire(driver("bob")); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(identity.Identity{Name: "alice", Grade: identity.Admin}); err != nil {
		t.Fatal(err)
	}
	c.t = c.t.Add(2 * time.Second)
	if _, err := l.Acquire(driver("alice")); err != nil {
		t.Fatalf("after the refill: %v", err)
	}
}

func TestConcurrentCallsAreBounded(t *testing.T) {
	l, _ := newAt(Config{Grades: map[identity.Grade]Limit{identity.Driver: {Concurrent: 2}}})
	r1, _ := l.Acquire(driver("alice"))
	r2, _ := l.Acquire(driver("alice"))
	_, err := l.Acquire(driver("alice"))
	if r := refusal(t, err); r.Error() != `"alice" already has 2 calls in flight, the most a driver may have at once; wait for one to end` || r.RetryAfter != time.Second {
		t.Fatalf("refusal %q", r.Error())
	}
	r1()
	r1() // a second release changes nothing
	r3, err := l.Acquire(driver("alice"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(driver("alice")); err == nil {
		t.Fatal("a third call in flight was admitted after a double release")
	}
	r2()
	r3()
}

func TestTheTableIsBounded(t *testing.T) {
	l, _ := newAt(Config{Grades: map[identity.Grade]Limit{identity.Driver: {Rate: 1, Burst: 1, Concurrent: 1}}, MaxCallers: 3})
	busy, err := l.Acquire(driver("a"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"b", "c", "d", "e"} {
		release, err := l.Acquire(driver(n))
		if err != nil {
			t.Fatal(err)
		}
		release()
		if l.Len() > 3 {
			t.Fatalf("%d callers tracked, bound 3", l.Len())
		}
	}
	// "a" was busy, so it was never evicted: its bucket is still empty.
	busy()
	if _, err := l.Acquire(driver("a")); err == nil {
		t.Fatal("the busy caller was evicted and got a fresh bucket")
	}
	// Every tracked caller busy: a newcomer is refused, not tracked.
	full, _ := newAt(Config{Grades: map[identity.Grade]Limit{identity.Driver: {Concurrent: 1}}, MaxCallers: 1})
	if _, err := full.Acquire(driver("x")); err != nil {
		t.Fatal(err)
	}
	_, err = full.Acquire(driver("y"))
	if r := refusal(t, err); r.Error() != "the gateway tracks the limits of 1 callers at most, and each has a call in flight; try again shortly" {
		t.Fatalf("refusal %q", r.Error())
	}
}

func TestBatchesCountEachCall(t *testing.T) {
	l, _ := newAt(Config{Grades: map[identity.Grade]Limit{identity.Driver: {Rate: 0.001, Burst: 3, Concurrent: 3}}})
	release, err := l.AcquireN(driver("alice"), 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.AcquireN(driver("alice"), 2); err == nil {
		t.Fatal("two more calls were admitted beside two in flight, limit 3")
	}
	release()
	if _, err := l.AcquireN(driver("alice"), 2); err == nil {
		t.Fatal("two more calls were admitted with one left in the bucket")
	}
	_, err = l.AcquireN(driver("bob"), 4)
	if r := refusal(t, err); r.Error() != "a batch of 4 calls is more than a driver may make at once; send fewer in one request" {
		t.Fatalf("refusal %q", r.Error())
	}
}
