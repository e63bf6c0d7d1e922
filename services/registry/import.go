package registry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/services/registry/internal/records"
	"github.com/switchboard-run/switchboard/services/registry/internal/store"
)

// Importing a registry.db. Earlier versions kept the registry in one bbolt
// file; its advertisements, last_seen times, memberships and tokens are
// copied into the bucket once, and the file is renamed so that it is never
// read again (nor silently ignored: a file left in place is refused).

// ImportedSuffix is added to a registry.db's name once it is imported.
const ImportedSuffix = ".imported"

// errImportedBefore says the registry.db to import is gone and the file it
// was renamed to is there: it was imported by an earlier start.
var errImportedBefore = errors.New("imported before")

// importBolt copies the registry.db at path into rec and renames it. A
// record already in the bucket is kept: the bucket is newer. A path
// imported before is errImportedBefore (a service's command line keeps
// --import across restarts); one that was never there is refused, rather
// than opened, which would create an empty file.
func importBolt(ctx context.Context, path string, rec *records.Records) (int, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, store.FileName)
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		if _, err := os.Stat(path + ImportedSuffix); err == nil {
			return 0, errImportedBefore
		}
		return 0, fmt.Errorf("--import %s: there is no such file (nor %s%s, as an earlier import leaves it)", path, path, ImportedSuffix)
	}
	st, err := store.Open(filepath.Dir(path), OpenTimeout)
	if err != nil {
		return 0, fmt.Errorf("--import %s: %w", path, err)
	}
	loaded, err := st.Load()
	if err == nil {
		var n int
		n, err = copyInto(ctx, rec, st, loaded)
		if cerr := st.Close(); cerr != nil && err == nil {
			err = cerr
		}
		if err == nil {
			if err = os.Rename(path, path+ImportedSuffix); err == nil {
				return n, nil
			}
		}
	} else {
		_ = st.Close()
	}
	return 0, fmt.Errorf("importing %s into NATS: %w (nothing was renamed; the import can run again)", path, err)
}

func copyInto(ctx context.Context, rec *records.Records, st *store.Store, loaded *store.Loaded) (int, error) {
	n := 0
	keep := func(_ uint64, err error) error {
		if err == nil {
			n++
		}
		if errors.Is(err, records.ErrChanged) {
			return nil // the bucket holds a newer record
		}
		return err
	}
	for client, encoded := range loaded.Adverts {
		if err := keep(rec.PutAdvert(ctx, client, encoded, 0)); err != nil {
			return n, err
		}
	}
	for client, at := range loaded.Seen {
		if err := keep(rec.PutSeen(ctx, client, at)); err != nil {
			return n, err
		}
	}
	for _, m := range loaded.Members {
		if err := keep(rec.Join(ctx, m.Workspace, m.Client)); err != nil {
			return n, err
		}
	}
	toks, err := st.TokensWithHashes()
	if err != nil {
		return n, err
	}
	for _, t := range toks {
		if err := keep(rec.CreateToken(ctx, imported(t.Token, time.Now()), t.Hash)); err != nil {
			return n, err
		}
	}
	return n, nil
}

// imported is a token of an earlier version as this one keeps it: the
// operator grade of then is an admin of every workspace, and a token that
// had no expiry gets the default one from the day it is imported — not
// from its creation, which would expire most of them on the day of the
// upgrade.
func imported(tok *registryv1.Token, now time.Time) *registryv1.Token {
	tok = proto.CloneOf(tok)
	if tok.GetGrade() == "operator" {
		tok.Grade = string(identity.Admin)
		tok.Workspaces = []string{identity.EveryWorkspace}
	}
	if tok.Expires == nil {
		tok.Expires = timestamppb.New(now.Add(DefaultTokenTTL))
	}
	return tok
}

// OpenTimeout bounds the wait for a registry.db's file lock.
const OpenTimeout = time.Second
