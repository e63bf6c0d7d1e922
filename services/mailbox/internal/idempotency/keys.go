// Package idempotency keeps the drivers' idempotency keys: each names, for
// one poster and for the mailbox's --ttl, the one invocation its first use
// posted, and once a keyed call collected it, its capture. A retry with the
// key is answered from here and never runs the tool again
// (docs/architecture.md, "Idempotency keys").
package idempotency

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/streams"
)

// Bucket is the key-value bucket of the keys.
const Bucket = "sb_idempotency"

// Config is what the keys are kept within.
type Config struct {
	// TTL is how long a key names its invocation: the mailbox's --ttl, so
	// a key outlives the handle it names.
	TTL time.Duration
	// MaxPerPoster bounds the keys one poster may claim on this replica
	// within one TTL.
	MaxPerPoster int
	// MaxValueBytes bounds one stored key: the largest capture and then some.
	MaxValueBytes int32
	// Replicas is how many copies JetStream keeps.
	Replicas int
}

// Keys is the bucket, and this replica's count of each poster's claims.
type Keys struct {
	kv  jetstream.KeyValue
	nc  *nats.Conn
	cfg Config

	mu     sync.Mutex
	claims map[string]*window
}

// window counts one poster's claims since start.
type window struct {
	start time.Time
	n     int
}

// New declares the bucket when it is missing.
func New(ctx context.Context, js jetstream.JetStream, cfg Config) (*Keys, error) {
	kv, err := streams.EnsureKV(ctx, js, jetstream.KeyValueConfig{
		Bucket:       Bucket,
		Description:  "Switchboard's idempotency keys: per driver, the invocation each key names, and its capture once collected",
		TTL:          cfg.TTL,
		History:      1,
		MaxValueSize: cfg.MaxValueBytes,
		Storage:      jetstream.FileStorage,
		Replicas:     max(cfg.Replicas, 1),
	})
	if err != nil {
		return nil, fmt.Errorf("declaring the idempotency keys' bucket %s: %w", Bucket, err)
	}
	return &Keys{kv: kv, nc: js.Conn(), cfg: cfg, claims: map[string]*window{}}, nil
}

// Sum is what a key's first use called: a retry must call the same. The
// MCP params are marked apart from a cwd (and a call without them sums as
// it did before they existed).
func Sum(client, tool, input string, cwd, mcpParams *string) []byte {
	h := sha256.New()
	for _, part := range []string{client, tool, input} {
		fmt.Fprintf(h, "%d:%s", len(part), part)
	}
	if cwd != nil {
		fmt.Fprintf(h, "%d:%s", len(*cwd), *cwd)
	}
	if mcpParams != nil {
		fmt.Fprintf(h, "mcp%d:%s", len(*mcpParams), *mcpParams)
	}
	return h.Sum(nil)
}

// A Claim is a key as this use of it found it.
type Claim struct {
	// Mine is true when this use claimed the key: it posts Invocation.
	Mine bool
	// Invocation is the handle the key names.
	Invocation string
	// Capture is the answer a keyed call collected, or nil.
	Capture *mailboxv1.Capture
	key     string
	rev     uint64
}

// Claim makes poster's key name invocation id for the call sum, or returns
// what it names already; a key that named another call is refused, and a
// new key past the poster's bound.
func (k *Keys) Claim(ctx context.Context, poster, key string, sum []byte, id string) (Claim, error) {
	name := storeKey(poster, key)
	value, err := proto.Marshal(&mailboxv1.StoredIdempotencyKey{Invocation: id, Call: sum})
	if err != nil {
		return Claim{}, err
	}
	for range 3 { // a key released (its post failed) between create and get is claimed again
		var rev uint64
		full := k.admit(poster)
		if full == nil {
			err = streams.ThroughElection(ctx, k.nc, func(ctx context.Context, _ bool) error {
				rev, err = k.kv.Create(ctx, name, value)
				return err
			})
			if err == nil {
				return Claim{Mine: true, Invocation: id, key: name, rev: rev}, nil
			}
			k.unadmit(poster)
			if !errors.Is(err, jetstream.ErrKeyExists) {
				return Claim{}, unavailable(err)
			}
		}
		got, err := k.read(ctx, name)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound) && full != nil: // a new key past the bound
			return Claim{}, full
		case errors.Is(err, jetstream.ErrKeyNotFound):
			continue
		case err != nil:
			return Claim{}, unavailable(err)
		case got.stored.GetInvocation() == id: // this use's own create, stored unseen before a retry
			return Claim{Mine: true, Invocation: id, key: name, rev: got.rev}, nil
		case string(got.stored.GetCall()) != string(sum):
			return Claim{}, status.Errorf(codes.FailedPrecondition,
				"idempotency key %q named another call (invocation %s, to another client or tool, or with other input) within the last %v; use a new key for a new call",
				key, got.stored.GetInvocation(), k.cfg.TTL)
		}
		return Claim{Invocation: got.stored.GetInvocation(), Capture: got.stored.GetCapture(), key: name, rev: got.rev}, nil
	}
	return Claim{}, status.Errorf(codes.Aborted, "idempotency key %q: another use of it is posting and failing at once; try again", key)
}

// Kept waits, until ctx ends, for a capture to be kept on cl's key, and
// returns it, or nil: a retry whose collection found the invocation taken
// by the key's first call reads what that call keeps.
func (k *Keys) Kept(ctx context.Context, cl Claim) *mailboxv1.Capture {
	w, err := k.kv.Watch(ctx, cl.key)
	if err != nil {
		return nil
	}
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return nil
		case e := <-w.Updates():
			if e == nil || e.Operation() != jetstream.KeyValuePut {
				continue // nil: the current value has been sent
			}
			stored := new(mailboxv1.StoredIdempotencyKey)
			if proto.Unmarshal(e.Value(), stored) != nil || stored.GetInvocation() != cl.Invocation {
				return nil
			}
			if c := stored.GetCapture(); c != nil {
				return c
			}
		}
	}
}

// RetryKey is the retry key (CaptureRequest.retry_key) of a keyed
// collection: the same for every retry with the key, so a retry may take
// again a capture the one before took and could not keep.
func (c Claim) RetryKey() string { return "idem." + c.key[2:34] }

// Answer keeps c on the key c answers, so a retry is answered with it.
// Best effort: a key left without it answers a retry with its handle,
// whose collection then says the capture was taken.
func (k *Keys) Answer(ctx context.Context, cl Claim, sum []byte, c *mailboxv1.Capture) error {
	value, err := proto.Marshal(&mailboxv1.StoredIdempotencyKey{Invocation: cl.Invocation, Call: sum, Capture: c})
	if err != nil {
		return err
	}
	return streams.ThroughElection(ctx, k.nc, func(ctx context.Context, _ bool) error {
		_, err := k.kv.Update(ctx, cl.key, value, cl.rev)
		if streams.Conflict(err) {
			return nil // answered already, by this call's try stored unseen or by a retry
		}
		return err
	})
}

// Release forgets a claim whose post was refused, so the key may be used
// again at once.
func (k *Keys) Release(ctx context.Context, cl Claim) {
	_ = k.kv.Delete(ctx, cl.key, jetstream.LastRevision(cl.rev))
}

// admit counts a claim of poster's against MaxPerPoster.
func (k *Keys) admit(poster string) error {
	now := time.Now()
	k.mu.Lock()
	defer k.mu.Unlock()
	w := k.claims[poster]
	if w == nil || now.Sub(w.start) >= k.cfg.TTL {
		if len(k.claims) >= maxPosters {
			k.forgetOld(now)
		}
		w = &window{start: now}
		k.claims[poster] = w
	}
	if w.n >= k.cfg.MaxPerPoster {
		return status.Errorf(codes.ResourceExhausted,
			"idempotency keys: %q used %d new keys on this mailbox replica since %s, the most it keeps per driver for %v (--max-idempotency-keys); retry with keys already used, or wait",
			poster, w.n, w.start.Format(time.RFC3339), k.cfg.TTL)
	}
	w.n++
	return nil
}

// unadmit takes back a count whose claim found the key claimed already.
func (k *Keys) unadmit(poster string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if w := k.claims[poster]; w != nil && w.n > 0 {
		w.n--
	}
}

// maxPosters bounds the posters counted at once; past it the windows that
// ended are dropped. Called locked.
const maxPosters = 100_000

func (k *Keys) forgetOld(now time.Time) {
	for p, w := range k.claims {
		if now.Sub(w.start) >= k.cfg.TTL {
			delete(k.claims, p)
		}
	}
}

type entry struct {
	stored *mailboxv1.StoredIdempotencyKey
	rev    uint64
}

func (k *Keys) read(ctx context.Context, name string) (entry, error) {
	e, err := k.kv.Get(ctx, name)
	if err != nil {
		return entry{}, err
	}
	stored := new(mailboxv1.StoredIdempotencyKey)
	if err := proto.Unmarshal(e.Value(), stored); err != nil {
		return entry{}, fmt.Errorf("the stored key %s is not a StoredIdempotencyKey: %w", name, err)
	}
	return entry{stored: stored, rev: e.Revision()}, nil
}

// storeKey is the bucket's key of poster's key: a hash, so neither bounds
// nor the bucket's key alphabet constrain what a driver may choose.
func storeKey(poster, key string) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%d:%s%s", len(poster), poster, key)))
	return "k." + hex.EncodeToString(sum[:])
}

func unavailable(err error) error {
	if _, ok := status.FromError(err); ok {
		return err
	}
	return status.Errorf(codes.Unavailable, "the mailbox cannot reach NATS right now to keep the idempotency key (%v); try again in a moment", err)
}
