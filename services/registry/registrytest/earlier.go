// Package registrytest gives the tests of other modules what they need of
// the registry beyond its API: a registry.db as earlier versions left it,
// written by their own bbolt store, to check that it is imported.
package registrytest

import (
	"crypto/sha256"
	"errors"
	"time"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/services/registry/internal/store"
	"github.com/switchboard-run/switchboard/services/registry/internal/toolset"
)

// Earlier is what a registry.db of an earlier version holds.
type Earlier struct {
	// Adverts are the clients' tool sets in force.
	Adverts map[string][]*registryv1.Tool
	// Seen are the clients' last_seen.
	Seen map[string]time.Time
	// Members maps a workspace to its clients.
	Members map[string][]string
	// Tokens maps each token's secret to its record: the file keeps only
	// the secret's hash, as the registry that minted it did.
	Tokens map[string]*registryv1.Token
}

// WriteEarlier writes e into dir/registry.db the way the bbolt registry
// of earlier versions stored it.
func WriteEarlier(dir string, e Earlier) (err error) {
	st, err := store.Open(dir, time.Second)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, st.Close()) }()
	err = st.Update(func(tx *store.Tx) error {
		for client, tools := range e.Adverts {
			encoded, err := toolset.Encode(tools)
			if err != nil {
				return err
			}
			if err := tx.PutAdvert(client, encoded); err != nil {
				return err
			}
		}
		for client, at := range e.Seen {
			if err := tx.PutSeen(client, at); err != nil {
				return err
			}
		}
		for ws, clients := range e.Members {
			for _, c := range clients {
				if err := tx.PutMember(store.Membership{Workspace: ws, Client: c}); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for secret, tok := range e.Tokens {
		if err := st.CreateToken(tok, sha256.Sum256([]byte(secret))); err != nil {
			return err
		}
	}
	return nil
}
