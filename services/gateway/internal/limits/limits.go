// Package limits holds the gateway's per-caller limits on calls: a rate
// (a token bucket, golang.org/x/time/rate) and a number of calls in flight,
// each per identity and set per grade. A call past either is refused with
// 429, a sentence naming the limit, and Retry-After.
//
// Memory is bounded: the table holds at most MaxCallers identities (about
// 200 bytes each, so the default 10 000 is some 2 MiB). A new caller
// evicts the one idle the longest; a caller with a call in flight is never
// evicted, and when every tracked caller has one the newcomer is refused.
// An evicted caller starts again with a full bucket.
package limits

import (
	"container/list"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/services/gateway/internal/httperr"
)

// Limit is what one identity of a grade may do.
type Limit struct {
	// Rate is calls per second, Burst how many may come at once; Rate 0
	// is no rate limit.
	Rate  float64
	Burst int
	// Concurrent is how many calls may be in flight at once; 0 is no limit.
	Concurrent int
}

// DefaultMaxCallers bounds the table when Config.MaxCallers is 0.
const DefaultMaxCallers = 10_000

// Config is the limits of each grade; a grade absent has none.
type Config struct {
	Grades map[identity.Grade]Limit
	// MaxCallers bounds the identities tracked (0: DefaultMaxCallers).
	MaxCallers int
}

// On reports whether any grade is limited.
func (c Config) On() bool {
	for _, l := range c.Grades {
		if l.Rate > 0 || l.Concurrent > 0 {
			return true
		}
	}
	return false
}

// Limiter tracks the callers.
type Limiter struct {
	cfg     Config
	now     func() time.Time
	refused refusals

	mu      sync.Mutex
	callers map[key]*list.Element // of *caller
	idle    *list.List            // least recently used at the back
}

type key struct {
	name  string
	grade identity.Grade
}

type caller struct {
	key      key
	bucket   *rate.Limiter // nil: no rate limit
	inflight int
}

// New returns a limiter for cfg.
func New(cfg Config) *Limiter {
	if cfg.MaxCallers <= 0 {
		cfg.MaxCallers = DefaultMaxCallers
	}
	return &Limiter{cfg: cfg, now: time.Now, callers: map[key]*list.Element{}, idle: list.New()}
}

// Refusal is a call past a limit: 429 with its sentence, and how long to
// wait before trying again.
type Refusal struct {
	Err        httperr.Error
	RetryAfter time.Duration
	// Limit is which limit refused it: ByRate, ByInFlight or ByCallers.
	Limit string
}

// The limits a call may be refused by, as the refusals counter labels them.
const (
	ByRate     = "rate"      // the caller's rate (its token bucket)
	ByInFlight = "in_flight" // the caller's calls in flight
	ByCallers  = "callers"   // the table of callers is full, each with a call in flight
)

func (r *Refusal) Error() string { return r.Err.Sentence }

// Unwrap lets httperr answer with the refusal's status and sentence.
func (r *Refusal) Unwrap() error { return &r.Err }

func refuse(limit string, after time.Duration, format string, args ...any) *Refusal {
	return &Refusal{Err: httperr.Error{Status: http.StatusTooManyRequests, Sentence: fmt.Sprintf(format, args...)}, RetryAfter: after, Limit: limit}
}

// Acquire admits one call of id, or refuses it. The caller must call
// release when the call ends.
func (l *Limiter) Acquire(id identity.Identity) (release func(), err error) {
	return l.AcquireN(id, 1)
}

// AcquireN admits n calls of id at once (a JSON-RPC batch), or none.
func (l *Limiter) AcquireN(id identity.Identity, n int) (release func(), err error) {
	if !l.limits(id.Grade) || n <= 0 {
		return func() {}, nil
	}
	release, ref := l.acquire(id, n)
	if ref != nil {
		l.refused.count(id.Grade, ref.Limit)
		return nil, ref
	}
	return release, nil
}

// acquire is AcquireN for a limited grade.
func (l *Limiter) acquire(id identity.Identity, n int) (func(), *Refusal) {
	lim := l.cfg.Grades[id.Grade]
	l.mu.Lock()
	defer l.mu.Unlock()
	k := key{id.Name, id.Grade}
	el, ok := l.callers[k]
	if !ok {
		var ref *Refusal
		if el, ref = l.admit(k, lim); ref != nil {
			return nil, ref
		}
	}
	c := el.Value.(*caller)
	l.idle.MoveToFront(el)
	if over := lim.Concurrent > 0 && n > lim.Concurrent; over || (c.bucket != nil && n > c.bucket.Burst()) {
		which := ByRate
		if over {
			which = ByInFlight
		}
		return nil, refuse(which, time.Second, "a batch of %d calls is more than %s may make at once; send fewer in one request", n, id.Grade.Article())
	}
	if lim.Concurrent > 0 && c.inflight+n > lim.Concurrent {
		return nil, refuse(ByInFlight, time.Second, "%q already has %d calls in flight, the most %s may have at once; wait for one to end",
			id.Name, c.inflight, id.Grade.Article())
	}
	if c.bucket != nil {
		now := l.now()
		res := c.bucket.ReserveN(now, n)
		if wait := res.DelayFrom(now); !res.OK() || wait > 0 {
			res.CancelAt(now)
			return nil, refuse(ByRate, wait, "%q made more than %s calls per second (bursts of %d), the rate %s may call at; try again in %s",
				id.Name, strconv.FormatFloat(lim.Rate, 'f', -1, 64), lim.Burst, id.Grade.Article(), seconds(wait))
		}
	}
	c.inflight += n
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			c.inflight -= n
			l.mu.Unlock()
		})
	}, nil
}

// admit adds a caller, evicting the one idle the longest when the table is
// full. Called with l.mu held.
func (l *Limiter) admit(k key, lim Limit) (*list.Element, *Refusal) {
	if len(l.callers) >= l.cfg.MaxCallers {
		// Walk from the least recently used: the first idle one goes.
		var victim *list.Element
		for el := l.idle.Back(); el != nil; el = el.Prev() {
			if el.Value.(*caller).inflight == 0 {
				victim = el
				break
			}
		}
		if victim == nil {
			return nil, refuse(ByCallers, time.Second, "the gateway tracks the limits of %d callers at most, and each has a call in flight; try again shortly", l.cfg.MaxCallers)
		}
		delete(l.callers, victim.Value.(*caller).key)
		l.idle.Remove(victim)
	}
	c := &caller{key: k}
	if lim.Rate > 0 {
		burst := max(lim.Burst, 1)
		c.bucket = rate.NewLimiter(rate.Limit(lim.Rate), burst)
	}
	el := l.idle.PushFront(c)
	l.callers[k] = el
	return el, nil
}

// Len is how many callers the table holds.
func (l *Limiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.callers)
}

// seconds is a wait as Retry-After writes it: whole seconds, at least 1.
func seconds(d time.Duration) string {
	return strconv.Itoa(retrySeconds(d)) + " s"
}

func retrySeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

// limits reports whether callers of grade g are limited at all.
func (l *Limiter) limits(g identity.Grade) bool {
	lim, ok := l.cfg.Grades[g]
	return ok && (lim.Rate > 0 || lim.Concurrent > 0)
}

// Wrap limits the requests of next by the calls isCall counts in each,
// per the identity in their context (put there by package httpauth): a
// refusal is 429 with Retry-After. isCall may read the body; it returns the
// request to go on with. Without limits (the default) next is returned
// as it is, and an unlimited caller's body is not read: the hot path pays
// nothing for limits it does not have.
func (l *Limiter) Wrap(isCall func(*http.Request) (int, *http.Request), next http.Handler) http.Handler {
	if !l.cfg.On() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := identity.FromContext(r.Context())
		if !ok || !l.limits(id.Grade) {
			next.ServeHTTP(w, r)
			return
		}
		calls, r := isCall(r)
		if calls == 0 {
			next.ServeHTTP(w, r)
			return
		}
		release, err := l.AcquireN(id, calls)
		if err != nil {
			if ref, ok := err.(*Refusal); ok {
				w.Header().Set("Retry-After", strconv.Itoa(retrySeconds(ref.RetryAfter)))
			}
			httperr.WriteErr(w, err)
			return
		}
		defer release()
		next.ServeHTTP(w, r)
	})
}
