// Package records keeps the registry's durable state in one JetStream
// key-value bucket, so that every registry replica serves the same state
// and none of it is lost with a process or a node. Its keys:
//
//	advert.<client>              the client's tool set (toolset.Encode)
//	seen.<client>                when the client last advertised its set unchanged
//	member.<workspace>.<client>  a membership (empty value)
//	token.<sha256 hex>           an API token's record, under its secret's hash
//	tokenid.<id>                 the hash of token <id>, to revoke by id
//	grant.<GrantKey(identity)>   the workspaces a certificate identity may see
//	group.<workspace>.<name>     a tool group of a workspace
//	pins.<workspace>.<client>    a client's tool pins in a workspace (pins.go)
//	pinpolicy.<workspace>        the workspace's pin policy
//
// Client and workspace names are [a-z0-9-], so they are key tokens as they
// are; an identity name may hold anything printable, so GrantKey encodes it. One bucket gives one order: its sequence is the registry's revision,
// and one watch feeds each replica's view of all of it.
package records

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/streams"
)

// Bucket is the registry's key-value bucket.
const Bucket = "sb_registry"

const (
	advertPrefix  = "advert."
	seenPrefix    = "seen."
	memberPrefix  = "member."
	tokenPrefix   = "token."
	tokenIDPrefix = "tokenid."
)

// Records is the bucket.
type Records struct {
	kv jetstream.KeyValue
	nc *nats.Conn // whether it is connected tells an election from an outage
}

// Open declares the bucket (created when missing, refused when someone
// else's) with replicas copies.
func Open(ctx context.Context, js jetstream.JetStream, replicas int, maxValue int32) (*Records, error) {
	kv, err := streams.EnsureKV(ctx, js, jetstream.KeyValueConfig{
		Bucket:       Bucket,
		Description:  "Switchboard's registry: advertisements, memberships, API tokens and grants",
		Storage:      jetstream.FileStorage,
		Replicas:     replicas,
		MaxValueSize: maxValue,
	})
	if err != nil {
		return nil, err
	}
	return &Records{kv: kv, nc: js.Conn()}, nil
}

// ErrChanged says a write found the key at another revision than the one
// it was made against: someone else wrote first.
var ErrChanged = errors.New("the record changed meanwhile")

// put writes key at revision rev (0: the key must not exist, or hold a
// deletion) and returns the new revision. It waits out a leader election
// (streams.ThroughElection); a try stored unseen then meets a conflict,
// which finding its own value there answers.
func (r *Records) put(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	var n uint64
	err := streams.ThroughElection(ctx, r.nc, func(ctx context.Context, retried bool) error {
		var err error
		if rev == 0 {
			n, err = r.kv.Create(ctx, key, value)
		} else {
			n, err = r.kv.Update(ctx, key, value, rev)
		}
		if retried && streams.Conflict(err) {
			if e, gerr := r.kv.Get(ctx, key); gerr == nil && bytes.Equal(e.Value(), value) {
				n, err = e.Revision(), nil
			}
		}
		return err
	})
	if streams.Conflict(err) {
		return 0, ErrChanged
	}
	return n, err
}

// set writes key whatever it held, waiting out a leader election.
func (r *Records) set(ctx context.Context, key string, value []byte) (uint64, error) {
	var n uint64
	err := streams.ThroughElection(ctx, r.nc, func(ctx context.Context, _ bool) error {
		var err error
		n, err = r.kv.Put(ctx, key, value)
		return err
	})
	return n, err
}

// remove deletes key at revision rev (0: whatever it held), waiting out a
// leader election; a try stored unseen then meets a conflict, which the
// key being gone answers.
func (r *Records) remove(ctx context.Context, key string, rev uint64) error {
	var opts []jetstream.KVDeleteOpt
	if rev != 0 {
		opts = append(opts, jetstream.LastRevision(rev))
	}
	return streams.ThroughElection(ctx, r.nc, func(ctx context.Context, retried bool) error {
		err := r.kv.Delete(ctx, key, opts...)
		if retried && streams.Conflict(err) {
			if _, gerr := r.kv.Get(ctx, key); errors.Is(gerr, jetstream.ErrKeyNotFound) {
				err = nil
			}
		}
		return err
	})
}

// PutAdvert stores client's encoded set over revision rev (0 when it has
// none); an empty set deletes the key: an empty set is a withdrawal.
func (r *Records) PutAdvert(ctx context.Context, client string, encoded []byte, rev uint64) (uint64, error) {
	if len(encoded) > 0 {
		return r.put(ctx, advertPrefix+client, encoded, rev)
	}
	if rev == 0 {
		return 0, nil // nothing to withdraw
	}
	return r.delete(ctx, advertPrefix+client, rev)
}

func (r *Records) delete(ctx context.Context, key string, rev uint64) (uint64, error) {
	err := r.remove(ctx, key, rev)
	if streams.Conflict(err) {
		return 0, ErrChanged
	}
	if err != nil {
		return 0, err
	}
	// A delete marker is a revision too; the watch reports it, and the
	// caller waits for it like for a write.
	e, err := r.kv.Get(ctx, key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return r.Latest(ctx)
	case err != nil:
		return 0, err
	}
	return e.Revision(), nil
}

// Latest is the bucket's last sequence: a revision every change so far is at
// or below.
func (r *Records) Latest(ctx context.Context) (uint64, error) {
	st, err := r.kv.Status(ctx)
	if err != nil {
		return 0, err
	}
	return st.(*jetstream.KeyValueBucketStatus).StreamInfo().State.LastSeq, nil
}

// PutSeen records that client was seen at.
func (r *Records) PutSeen(ctx context.Context, client string, at time.Time) (uint64, error) {
	b, _ := at.UTC().MarshalText()
	return r.set(ctx, seenPrefix+client, b)
}

// Join adds a membership; a membership already there changes nothing
// (ErrChanged).
func (r *Records) Join(ctx context.Context, workspace, client string) (uint64, error) {
	return r.put(ctx, memberPrefix+workspace+"."+client, nil, 0)
}

// Leave removes a membership; one that is not there changes nothing
// (ErrChanged).
func (r *Records) Leave(ctx context.Context, workspace, client string) (uint64, error) {
	key := memberPrefix + workspace + "." + client
	e, err := r.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0, ErrChanged
	}
	if err != nil {
		return 0, err
	}
	return r.delete(ctx, key, e.Revision())
}

// Hash names a token by the SHA-256 of its secret, all the registry keeps
// of the secret.
type Hash = [32]byte

// CreateToken stores a token under its hash and its id, refusing an id or
// a hash already taken (ErrChanged).
func (r *Records) CreateToken(ctx context.Context, tok *registryv1.Token, hash Hash) (uint64, error) {
	rec, err := proto.MarshalOptions{Deterministic: true}.Marshal(tok)
	if err != nil {
		return 0, err
	}
	h := hex.EncodeToString(hash[:])
	if _, err := r.put(ctx, tokenIDPrefix+tok.GetId(), []byte(h), 0); err != nil {
		return 0, err
	}
	return r.put(ctx, tokenPrefix+h, rec, 0)
}

// TokenByHash reads the token whose secret hashes to hash, from the bucket
// itself (never a cache: a revocation takes effect at once). nil when there
// is none.
func (r *Records) TokenByHash(ctx context.Context, hash Hash) (*registryv1.Token, error) {
	e, err := r.kv.Get(ctx, tokenPrefix+hex.EncodeToString(hash[:]))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	tok := new(registryv1.Token)
	if err := proto.Unmarshal(e.Value(), tok); err != nil {
		return nil, fmt.Errorf("the token record under %s…: %w", hex.EncodeToString(hash[:4]), err)
	}
	return tok, nil
}

// RevokeToken deletes token id and returns its record; nil when there is
// none.
func (r *Records) RevokeToken(ctx context.Context, id string) (*registryv1.Token, uint64, error) {
	e, err := r.kv.Get(ctx, tokenIDPrefix+id)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrInvalidKey) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	h := string(e.Value())
	var hash Hash
	if b, err := hex.DecodeString(h); err != nil || len(b) != len(hash) {
		return nil, 0, fmt.Errorf("token %q names no hash", id)
	} else {
		copy(hash[:], b)
	}
	tok, err := r.TokenByHash(ctx, hash)
	if err != nil {
		return nil, 0, err
	}
	if err := r.remove(ctx, tokenPrefix+h, 0); err != nil {
		return nil, 0, err
	}
	if err := r.remove(ctx, tokenIDPrefix+id, 0); err != nil {
		return nil, 0, err
	}
	if tok == nil {
		return nil, 0, nil
	}
	rev, err := r.Latest(ctx)
	return tok, rev, err
}

// Change is one key of the bucket as the watch reports it. Exactly one of
// the kinds is set.
type Change struct {
	Revision uint64
	At       time.Time
	Deleted  bool

	Advert *Advert
	Seen   *Seen
	Member *Member
	Token  *Token
	Grant  *Grant
	Group  *Group
	Pins   *Pins
	Policy *Policy

	AuditPolicy *AuditPolicy
}

// Token is one token record, under the hex of its secret's hash.
type Token struct {
	Hash   string
	Record *registryv1.Token // nil on a deletion
}

// Advert is a client's stored set.
type Advert struct {
	Client  string
	Encoded []byte
}

// Seen is when a client advertised its set unchanged.
type Seen struct {
	Client string
	At     time.Time
}

// Member is one membership.
type Member struct {
	Workspace, Client string
}

// Watch calls on for every key of the bucket — first as it stands, then
// synced, then each change in the bucket's order — until ctx ends or the
// watch fails. A key it cannot read is reported to bad, and to on as a
// change of no kind: its revision still counts.
func (r *Records) Watch(ctx context.Context, on func(Change), synced func(), bad func(key string, err error)) error {
	return streams.Watch(ctx, r.kv, func(e jetstream.KeyValueEntry) {
		c, err := decode(e)
		if err != nil {
			bad(e.Key(), err)
			c = Change{Revision: e.Revision(), At: e.Created()}
		}
		on(c)
	}, synced)
}

func decode(e jetstream.KeyValueEntry) (Change, error) {
	c := Change{Revision: e.Revision(), At: e.Created(), Deleted: e.Operation() != jetstream.KeyValuePut}
	key := e.Key()
	switch {
	case strings.HasPrefix(key, advertPrefix):
		c.Advert = &Advert{Client: key[len(advertPrefix):], Encoded: e.Value()}
	case strings.HasPrefix(key, seenPrefix):
		s := &Seen{Client: key[len(seenPrefix):]}
		if !c.Deleted {
			if err := s.At.UnmarshalText(e.Value()); err != nil {
				return c, err
			}
		}
		c.Seen = s
	case strings.HasPrefix(key, memberPrefix):
		ws, client, ok := strings.Cut(key[len(memberPrefix):], ".")
		if !ok {
			return c, errors.New("a membership key names no client")
		}
		c.Member = &Member{Workspace: ws, Client: client}
	case strings.HasPrefix(key, tokenIDPrefix):
		// The id index serves revocation; the view has no use for it.
	case strings.HasPrefix(key, grantPrefix):
		if err := decodeGrant(&c, key[len(grantPrefix):], e.Value()); err != nil {
			return c, err
		}
	case strings.HasPrefix(key, groupPrefix):
		if err := decodeGroup(&c, key[len(groupPrefix):], e.Value()); err != nil {
			return c, err
		}
	case strings.HasPrefix(key, pinsPrefix):
		if err := decodePins(&c, key[len(pinsPrefix):], e.Value()); err != nil {
			return c, err
		}
	case strings.HasPrefix(key, policyPrefix):
		if err := decodePolicy(&c, key[len(policyPrefix):], e.Value()); err != nil {
			return c, err
		}
	case strings.HasPrefix(key, auditPolicyPrefix):
		if err := decodeAuditPolicy(&c, key[len(auditPolicyPrefix):], e.Value()); err != nil {
			return c, err
		}
	case strings.HasPrefix(key, tokenPrefix):
		c.Token = &Token{Hash: key[len(tokenPrefix):]}
		if !c.Deleted {
			c.Token.Record = new(registryv1.Token)
			if err := proto.Unmarshal(e.Value(), c.Token.Record); err != nil {
				return c, err
			}
		}
	default:
		return c, fmt.Errorf("no record kind has the key %q", key)
	}
	return c, nil
}
