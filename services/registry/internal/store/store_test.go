package store_test

import (
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/services/registry/internal/store"
)

func open(t *testing.T, dir string) *store.Store {
	t.Helper()
	s, err := store.Open(dir, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStoreSurvivesReopening(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := open(t, dir)
	at := time.Date(2026, 5, 1, 12, 0, 0, 123456789, time.UTC)
	err := s.Update(func(tx *store.Tx) error {
		return errors.Join(
			tx.PutAdvert("laptop", []byte("set-1")),
			tx.PutAdvert("gone", []byte("set-2")),
			tx.PutAdvert("gone", nil), // the empty set withdraws
			tx.PutSeen("laptop", at),
			tx.PutMember(store.Membership{Workspace: "default", Client: "laptop"}),
			tx.PutMember(store.Membership{Workspace: "default", Client: "box"}),
			tx.PutMember(store.Membership{Workspace: "ops", Client: "box"}),
			tx.DeleteMember(store.Membership{Workspace: "ops", Client: "box"}),
		)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir)
	defer s.Close()
	got, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Adverts) != 1 || string(got.Adverts["laptop"]) != "set-1" {
		t.Errorf("adverts = %q, want only laptop's", got.Adverts)
	}
	if !got.Seen["laptop"].Equal(at) {
		t.Errorf("last_seen = %v, want %v", got.Seen["laptop"], at)
	}
	want := []store.Membership{{Workspace: "default", Client: "box"}, {Workspace: "default", Client: "laptop"}}
	if len(got.Members) != len(want) || got.Members[0] != want[0] || got.Members[1] != want[1] {
		t.Errorf("members = %v, want %v", got.Members, want)
	}
}

func TestSecondOpenFailsWithASentence(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := open(t, dir)
	defer s.Close()
	start := time.Now()
	_, err := store.Open(dir, 100*time.Millisecond)
	if err == nil {
		t.Fatal("a second open of a locked store succeeded")
	}
	if !strings.Contains(err.Error(), "is locked by another process") || !strings.Contains(err.Error(), filepath.Join(dir, store.FileName)) {
		t.Fatalf("second open: %q, want a sentence naming the locked file", err)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Fatalf("second open waited %v; it must give up after its timeout", waited)
	}
}

func TestForeignLayoutIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db, err := bolt.Open(filepath.Join(dir, store.FileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("meta"))
		if err != nil {
			return err
		}
		return b.Put([]byte("version"), []byte{0, 0, 0, 0, 0, 0, 0, 9})
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = store.Open(dir, 100*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "layout this registry does not read") {
		t.Fatalf("open of a version-9 store: %v, want a refusal", err)
	}
}

func TestTokens(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := open(t, dir)
	h1, h2 := sha256.Sum256([]byte("one")), sha256.Sum256([]byte("two"))
	t1 := &registryv1.Token{Id: "tok-00000002", Identity: "alice", Grade: "operator"}
	t2 := &registryv1.Token{Id: "tok-00000001", Identity: "box", Grade: "host"}
	if err := s.CreateToken(t1, h1); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateToken(t2, h2); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateToken(&registryv1.Token{Id: t1.Id}, sha256.Sum256([]byte("three"))); !errors.Is(err, store.ErrTokenExists) {
		t.Fatalf("a clashing id: %v, want ErrTokenExists", err)
	}
	s.Close()
	s = open(t, dir)
	defer s.Close()
	list, err := s.Tokens()
	if err != nil || len(list) != 2 || list[0].Id != t2.Id || list[1].Id != t1.Id {
		t.Fatalf("Tokens = %v, %v; want both, sorted by id", list, err)
	}
	if got, err := s.TokenByHash(h2); err != nil || got.Identity != "box" {
		t.Fatalf("TokenByHash = %v, %v", got, err)
	}
	if got, err := s.RevokeToken(t2.Id); err != nil || got.Identity != "box" {
		t.Fatalf("RevokeToken = %v, %v", got, err)
	}
	if _, err := s.TokenByHash(h2); !errors.Is(err, store.ErrNoToken) {
		t.Fatalf("TokenByHash after revoke: %v, want ErrNoToken", err)
	}
	if _, err := s.RevokeToken(t2.Id); !errors.Is(err, store.ErrNoToken) {
		t.Fatalf("second revoke: %v, want ErrNoToken", err)
	}
	if _, err := os.Stat(filepath.Join(dir, store.FileName)); err != nil {
		t.Fatal(err)
	}
}
