package store

import (
	"crypto/sha256"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
)

// Hash is the SHA-256 of a token's secret: all the store keeps of it.
type Hash = [sha256.Size]byte

var (
	// ErrTokenExists is returned by CreateToken for an id already in use.
	ErrTokenExists = errors.New("a token with this id exists")
	// ErrNoToken is returned for an id or hash nobody holds.
	ErrNoToken = errors.New("no such token")
)

// CreateToken stores a token record under its id with the hash of its
// secret, refusing an id already taken.
func (s *Store) CreateToken(tok *registryv1.Token, hash Hash) error {
	rec, err := proto.MarshalOptions{Deterministic: true}.Marshal(tok)
	if err != nil {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		tokens, hashes := tx.Bucket(bucketTokens), tx.Bucket(bucketHashes)
		if tokens.Get([]byte(tok.GetId())) != nil || hashes.Get(hash[:]) != nil {
			return ErrTokenExists
		}
		if err := tokens.Put([]byte(tok.GetId()), append(hash[:], rec...)); err != nil {
			return err
		}
		return hashes.Put(hash[:], []byte(tok.GetId()))
	})
}

// HashedToken is a token record with the hash of its secret.
type HashedToken struct {
	Token *registryv1.Token
	Hash  Hash
}

// TokensWithHashes lists every token record with its hash, sorted by id.
func (s *Store) TokensWithHashes() ([]HashedToken, error) {
	var out []HashedToken
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketTokens).ForEach(func(k, v []byte) error {
			tok, hash, err := decodeToken(k, v)
			if err != nil {
				return err
			}
			out = append(out, HashedToken{Token: tok, Hash: hash})
			return nil
		})
	})
	return out, err
}

// Tokens lists every token record, sorted by id.
func (s *Store) Tokens() ([]*registryv1.Token, error) {
	var out []*registryv1.Token
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketTokens).ForEach(func(k, v []byte) error {
			tok, _, err := decodeToken(k, v)
			if err != nil {
				return err
			}
			out = append(out, tok)
			return nil
		})
	})
	return out, err
}

// RevokeToken deletes the token id and returns its record, or ErrNoToken.
func (s *Store) RevokeToken(id string) (*registryv1.Token, error) {
	var out *registryv1.Token
	err := s.db.Update(func(tx *bolt.Tx) error {
		tokens := tx.Bucket(bucketTokens)
		v := tokens.Get([]byte(id))
		if v == nil {
			return ErrNoToken
		}
		tok, hash, err := decodeToken([]byte(id), v)
		if err != nil {
			return err
		}
		if err := tx.Bucket(bucketHashes).Delete(hash[:]); err != nil {
			return err
		}
		out = tok
		return tokens.Delete([]byte(id))
	})
	return out, err
}

// TokenByHash returns the record whose secret hashes to hash, or
// ErrNoToken. It reads the file every time: a revoked token must stop
// working at once, so nothing is cached.
func (s *Store) TokenByHash(hash Hash) (*registryv1.Token, error) {
	var out *registryv1.Token
	err := s.db.View(func(tx *bolt.Tx) error {
		id := tx.Bucket(bucketHashes).Get(hash[:])
		if id == nil {
			return ErrNoToken
		}
		v := tx.Bucket(bucketTokens).Get(id)
		if v == nil {
			return fmt.Errorf("token hash names id %q, which has no record", id)
		}
		tok, _, err := decodeToken(id, v)
		out = tok
		return err
	})
	return out, err
}

func decodeToken(id, v []byte) (*registryv1.Token, Hash, error) {
	var hash Hash
	if len(v) < len(hash) {
		return nil, hash, fmt.Errorf("token %q: record is %d bytes, shorter than its hash", id, len(v))
	}
	copy(hash[:], v)
	tok := new(registryv1.Token)
	if err := proto.Unmarshal(v[len(hash):], tok); err != nil {
		return nil, hash, fmt.Errorf("token %q: %w", id, err)
	}
	return tok, hash, nil
}
