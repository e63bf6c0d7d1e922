// Package store keeps the registry's durable state in one bbolt file:
// advertisements with their clients' last_seen, workspace memberships, and
// API token records. Presence is live and never stored.
package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// FileName is the store's file inside the data directory.
const FileName = "registry.db"

// version is the layout written here; a store of another layout is refused
// rather than misread.
const version = 1

var (
	bucketMeta    = []byte("meta")
	bucketAdverts = []byte("adverts")      // client → toolset.Encode of its set
	bucketSeen    = []byte("seen")         // client → last_seen, unix nanoseconds big-endian
	bucketMembers = []byte("members")      // workspace 0x00 client → empty
	bucketTokens  = []byte("tokens")       // id → sha256(secret) ‖ Token
	bucketHashes  = []byte("token-hashes") // sha256(secret) → id
	keyVersion    = []byte("version")
)

// Store is the open bbolt file.
type Store struct {
	db   *bolt.DB
	path string
}

// Open opens (creating when absent) dir/registry.db. A second process on
// the same directory waits at most timeout for the file lock, then gets a
// sentence instead of hanging.
func Open(dir string, timeout time.Duration) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the data directory: %w", err)
	}
	path := filepath.Join(dir, FileName)
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("%s is locked by another process (another registry on the same --data-dir?); waited %v", path, timeout)
	}
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	s := &Store{db: db, path: path}
	if err := db.Update(s.init); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// init creates the buckets and checks the layout version.
func (s *Store) init(tx *bolt.Tx) error {
	for _, name := range [][]byte{bucketMeta, bucketAdverts, bucketSeen, bucketMembers, bucketTokens, bucketHashes} {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("creating bucket %s in %s: %w", name, s.path, err)
		}
	}
	meta := tx.Bucket(bucketMeta)
	v := meta.Get(keyVersion)
	if v == nil {
		return meta.Put(keyVersion, binary.BigEndian.AppendUint64(nil, version))
	}
	if len(v) != 8 || binary.BigEndian.Uint64(v) != version {
		return fmt.Errorf("%s holds a layout this registry does not read (version %x, want %d)", s.path, v, version)
	}
	return nil
}

// Path is the store's file.
func (s *Store) Path() string { return s.path }

// Close closes the file, waiting for transactions in flight.
func (s *Store) Close() error { return s.db.Close() }

// Membership is one client's membership of one workspace.
type Membership struct {
	Workspace, Client string
}

func memberKey(m Membership) []byte {
	return []byte(m.Workspace + "\x00" + m.Client)
}

// Loaded is everything a start reads back.
type Loaded struct {
	// Adverts maps a client to the encoding of its set.
	Adverts map[string][]byte
	// Seen maps a client to its last_seen.
	Seen map[string]time.Time
	// Members lists every membership, sorted by workspace then client.
	Members []Membership
}

// Load reads the stored state.
func (s *Store) Load() (*Loaded, error) {
	out := &Loaded{Adverts: map[string][]byte{}, Seen: map[string]time.Time{}}
	err := s.db.View(func(tx *bolt.Tx) error {
		err := tx.Bucket(bucketAdverts).ForEach(func(k, v []byte) error {
			out.Adverts[string(k)] = append([]byte(nil), v...)
			return nil
		})
		if err != nil {
			return err
		}
		err = tx.Bucket(bucketSeen).ForEach(func(k, v []byte) error {
			if len(v) != 8 {
				return fmt.Errorf("last_seen of %q is %d bytes, want 8", k, len(v))
			}
			out.Seen[string(k)] = time.Unix(0, int64(binary.BigEndian.Uint64(v))).UTC()
			return nil
		})
		if err != nil {
			return err
		}
		return tx.Bucket(bucketMembers).ForEach(func(k, _ []byte) error {
			ws, client, ok := cutZero(k)
			if !ok {
				return fmt.Errorf("membership key %q has no separator", k)
			}
			out.Members = append(out.Members, Membership{Workspace: ws, Client: client})
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", s.path, err)
	}
	return out, nil
}

func cutZero(k []byte) (string, string, bool) {
	for i, c := range k {
		if c == 0 {
			return string(k[:i]), string(k[i+1:]), true
		}
	}
	return "", "", false
}

// Update runs f in one write transaction: everything f writes lands
// together (one fsync), or nothing does.
func (s *Store) Update(f func(*Tx) error) error {
	return s.db.Update(func(tx *bolt.Tx) error { return f(&Tx{tx: tx}) })
}

// Tx is a write transaction over the registry's buckets.
type Tx struct{ tx *bolt.Tx }

// PutAdvert stores client's encoded set; an empty encoding (the empty set)
// deletes it, since an empty set is a withdrawal.
func (t *Tx) PutAdvert(client string, encoded []byte) error {
	if len(encoded) == 0 {
		return t.tx.Bucket(bucketAdverts).Delete([]byte(client))
	}
	return t.tx.Bucket(bucketAdverts).Put([]byte(client), encoded)
}

// PutSeen stores client's last_seen.
func (t *Tx) PutSeen(client string, at time.Time) error {
	return t.tx.Bucket(bucketSeen).Put([]byte(client), binary.BigEndian.AppendUint64(nil, uint64(at.UnixNano())))
}

// PutMember stores a membership.
func (t *Tx) PutMember(m Membership) error {
	return t.tx.Bucket(bucketMembers).Put(memberKey(m), nil)
}

// DeleteMember removes a membership.
func (t *Tx) DeleteMember(m Membership) error {
	return t.tx.Bucket(bucketMembers).Delete(memberKey(m))
}
