// Package streams declares the JetStream streams and key-value buckets the
// suite keeps its state in. A declaration creates what is missing, updates
// the limits the suite owns (replicas, ages, sizes: an operator may change
// them between starts), and refuses — with a sentence naming the setting — a
// stream or bucket of the same name that someone else made or that another
// layout of Switchboard wrote. Nothing is reused silently. Watch follows a
// bucket's keys, for every service that keeps a view of one.
package streams

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// LayoutKey is the metadata key that marks a stream as Switchboard's, with
// the version of the layout its records follow.
const LayoutKey = "switchboard.layout"

// Layout is the version of the records this build reads and writes.
const Layout = "1"

// declareTries bounds the tries of a declaration whose request timed out.
// Creating a replicated stream waits for its group of servers to form,
// which a loaded cluster (or one still electing its leaders) may take
// longer than the 5 s one JetStream request waits: the stream is made all
// the same, and the next try finds it.
const declareTries = 4

// noPeers is JetStream's "no suitable peers for placement" (nats-server's
// JSClusterNoPeersErr): a replicated stream asked of a cluster that is
// still forming, one of whose servers counts as offline for a moment (a
// suite and its NATS nodes started together, as compose does). It passes
// in seconds, so a declaration waits it out for up to noPeersWait.
const (
	noPeers     jetstream.ErrorCode = 10005
	noPeersWait                     = 30 * time.Second
)

// again runs declare until it succeeds or fails for good: a timed-out
// request is tried declareTries times, a cluster without its peers yet is
// waited for up to noPeersWait, anything else is final; ctx ending stops it.
func again[T any](ctx context.Context, declare func() (T, error)) (T, error) {
	timeouts, waited := 0, time.Duration(0)
	for {
		v, err := declare()
		var api *jetstream.APIError
		switch {
		case err == nil || ctx.Err() != nil:
			return v, err
		case errors.As(err, &api) && api.ErrorCode == noPeers && waited < noPeersWait:
			pause := min(250*time.Millisecond<<min(waited/time.Second, 3), 2*time.Second)
			select {
			case <-ctx.Done():
				return v, err
			case <-time.After(pause):
			}
			waited += pause
		case errors.Is(err, context.DeadlineExceeded):
			if timeouts++; timeouts == declareTries {
				return v, err
			}
		default:
			return v, err
		}
	}
}

// Conflict reports whether err is a write that lost a race: Create of a key
// that exists, or Update, Delete or Purge at a revision the key has left.
// JetStream says the second in two ways — one copy with the code Create
// uses, several copies with another — and this is the one test for both.
func Conflict(err error) bool {
	return errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch)
}

// Ensure returns the stream cfg describes, creating it when it does not
// exist. cfg.Metadata gets the layout mark.
func Ensure(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	return again(ctx, func() (jetstream.Stream, error) { return ensure(ctx, js, cfg) })
}

func ensure(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	cfg.Metadata = mark(cfg.Metadata)
	s, err := js.Stream(ctx, cfg.Name)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		s, err = js.CreateStream(ctx, cfg)
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) { // another replica made it meanwhile
			return ensure(ctx, js, cfg)
		}
		if err != nil {
			return nil, fmt.Errorf("creating the JetStream stream %q: %w", cfg.Name, err)
		}
		return s, nil
	case err != nil:
		return nil, fmt.Errorf("reading the JetStream stream %q: %w", cfg.Name, err)
	}
	have := s.CachedInfo().Config
	if d := foreign(cfg, have); d != "" {
		return nil, fmt.Errorf("the JetStream stream %q exists with %s; it was made by something other than this version of Switchboard, so it is not reused: remove it, or point --nats at another cluster", cfg.Name, d)
	}
	if tunablesDiffer(cfg, have) {
		if s, err = js.UpdateStream(ctx, cfg); err != nil {
			return nil, fmt.Errorf("updating the limits of the JetStream stream %q: %w", cfg.Name, err)
		}
	}
	return s, nil
}

// EnsureKV returns the bucket cfg describes, declared as Ensure declares
// streams; each request is bounded by natsconn.RequestTimeout. With more
// than one copy, reads go to the leader: a lagging copy's direct get says
// "no such key" for a key written a moment ago (an invocation absent, a
// revoked token still good). With one copy, direct reads stay.
func EnsureKV(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	return again(ctx, func() (jetstream.KeyValue, error) { return ensureKV(ctx, js, cfg) })
}

func ensureKV(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	cfg.Metadata = mark(cfg.Metadata)
	kv, err := js.KeyValue(ctx, cfg.Bucket)
	switch {
	case errors.Is(err, jetstream.ErrBucketNotFound):
		_, err = js.CreateKeyValue(ctx, cfg)
		if errors.Is(err, jetstream.ErrBucketExists) || errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return ensureKV(ctx, js, cfg)
		}
		if err != nil {
			return nil, fmt.Errorf("creating the key-value bucket %q: %w", cfg.Bucket, err)
		}
		return reads(ctx, js, cfg)
	case err != nil:
		return nil, fmt.Errorf("reading the key-value bucket %q: %w", cfg.Bucket, err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the key-value bucket %q: %w", cfg.Bucket, err)
	}
	have := st.(*jetstream.KeyValueBucketStatus).StreamInfo().Config
	want, err := kvStreamConfig(cfg, have)
	if err != nil {
		return nil, err
	}
	if d := foreign(want, have); d != "" {
		return nil, fmt.Errorf("the key-value bucket %q exists with %s; it was made by something other than this version of Switchboard, so it is not reused: remove it, or point --nats at another cluster", cfg.Bucket, d)
	}
	if tunablesDiffer(want, have) {
		if _, err = js.UpdateKeyValue(ctx, cfg); err != nil {
			return nil, fmt.Errorf("updating the limits of the key-value bucket %q: %w", cfg.Bucket, err)
		}
		return reads(ctx, js, cfg)
	}
	if have.AllowDirect != (cfg.Replicas <= 1) {
		return reads(ctx, js, cfg)
	}
	return bounded{kv}, nil
}

// Bind returns bucket, which another service declares, for reading only:
// jetstream.ErrBucketNotFound until it has. Its requests are bounded as
// EnsureKV's are; it reads the way its owner set its stream.
func Bind(ctx context.Context, js jetstream.JetStream, bucket string) (jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, bucket)
	if err != nil {
		return nil, err
	}
	return bounded{kv}, nil
}

// reads sets the bucket's direct reads for its replicas (see EnsureKV) and
// returns a handle that reads the way they say.
func reads(ctx context.Context, js jetstream.JetStream, kvcfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	s, err := js.Stream(ctx, "KV_"+kvcfg.Bucket)
	if err != nil {
		return nil, fmt.Errorf("reading the key-value bucket %q: %w", kvcfg.Bucket, err)
	}
	direct := kvcfg.Replicas <= 1
	if cfg := s.CachedInfo().Config; cfg.AllowDirect != direct {
		cfg.AllowDirect = direct
		if _, err := js.UpdateStream(ctx, cfg); err != nil {
			return nil, fmt.Errorf("setting the direct reads of the key-value bucket %q: %w", kvcfg.Bucket, err)
		}
	}
	kv, err := js.KeyValue(ctx, kvcfg.Bucket) // a handle reads the way its stream said when it was bound
	if err != nil {
		return nil, fmt.Errorf("reading the key-value bucket %q: %w", kvcfg.Bucket, err)
	}
	return bounded{kv}, nil
}

// kvStreamConfig is the stream settings a bucket's config asks for, in the
// terms foreign and tunablesDiffer compare.
func kvStreamConfig(cfg jetstream.KeyValueConfig, have jetstream.StreamConfig) (jetstream.StreamConfig, error) {
	history := int64(cfg.History)
	if history == 0 {
		history = 1
	}
	return jetstream.StreamConfig{
		Name:                   have.Name,
		Subjects:               have.Subjects, // the client library's naming, not ours
		Retention:              jetstream.LimitsPolicy,
		Storage:                cfg.Storage,
		Replicas:               max(cfg.Replicas, 1),
		MaxAge:                 cfg.TTL,
		MaxBytes:               orUnlimited(cfg.MaxBytes),
		MaxMsgSize:             orUnlimited32(cfg.MaxValueSize),
		MaxMsgsPerSubject:      history,
		AllowMsgTTL:            cfg.LimitMarkerTTL > 0,
		SubjectDeleteMarkerTTL: cfg.LimitMarkerTTL,
		Discard:                jetstream.DiscardNew,
		Metadata:               cfg.Metadata,
	}, nil
}

func orUnlimited(n int64) int64 {
	if n == 0 {
		return -1
	}
	return n
}

func orUnlimited32(n int32) int32 {
	if n == 0 {
		return -1
	}
	return n
}

func mark(md map[string]string) map[string]string {
	out := maps.Clone(md)
	if out == nil {
		out = map[string]string{}
	}
	out[LayoutKey] = Layout
	return out
}

// foreign names the first setting that says the stream is not ours to
// use: no layout mark (or another layout), other subjects, another
// retention or storage kind, or TTL markers missing. Empty when it is ours.
func foreign(want, have jetstream.StreamConfig) string {
	switch {
	case have.Metadata[LayoutKey] != want.Metadata[LayoutKey]:
		if v, ok := have.Metadata[LayoutKey]; ok {
			return fmt.Sprintf("Switchboard's layout %s, where this build reads layout %s", v, want.Metadata[LayoutKey])
		}
		return "no Switchboard layout mark"
	case !slices.Equal(slices.Sorted(slices.Values(have.Subjects)), slices.Sorted(slices.Values(want.Subjects))):
		return fmt.Sprintf("subjects %s, where this build needs %s", strings.Join(have.Subjects, " "), strings.Join(want.Subjects, " "))
	case have.Retention != want.Retention:
		return fmt.Sprintf("retention %s, where this build needs %s", have.Retention, want.Retention)
	case have.Storage != want.Storage:
		return fmt.Sprintf("%s storage, where this build needs %s", have.Storage, want.Storage)
	case have.AllowMsgTTL != want.AllowMsgTTL:
		return fmt.Sprintf("per-message TTLs allowed %v, where this build needs %v", have.AllowMsgTTL, want.AllowMsgTTL)
	}
	return ""
}

// tunablesDiffer reports whether a limit the suite owns differs.
func tunablesDiffer(want, have jetstream.StreamConfig) bool {
	return have.Replicas != max(want.Replicas, 1) || have.MaxAge != want.MaxAge ||
		have.MaxBytes != orUnlimited(want.MaxBytes) || have.MaxMsgSize != orUnlimited32(want.MaxMsgSize) ||
		have.MaxMsgsPerSubject != orUnlimited(want.MaxMsgsPerSubject) || have.Discard != want.Discard ||
		have.DiscardNewPerSubject != want.DiscardNewPerSubject || have.SubjectDeleteMarkerTTL != want.SubjectDeleteMarkerTTL ||
		(want.MaxConsumers > 0 && have.MaxConsumers != want.MaxConsumers) || have.MaxMsgs != orUnlimited(want.MaxMsgs) ||
		(want.Duplicates > 0 && have.Duplicates != want.Duplicates)
}
