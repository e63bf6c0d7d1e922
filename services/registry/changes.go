package registry

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/switchboard-run/switchboard/kit/suite/presence"
	"github.com/switchboard-run/switchboard/services/registry/internal/records"
)

// writeAttempts bounds the retries of a write that lost a race with
// another replica's write of the same key.
const writeAttempts = 4

// advertise puts a checked set in force for client. It returns whether the
// set in force changed. Another replica may write the same client's set at
// the same moment: writes are made against the revision the view holds,
// and one that finds the bucket moved on catches up and decides again.
func (s *state) advertise(ctx context.Context, client string, next *advert, session string, now time.Time) (bool, error) {
	for range writeAttempts {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return false, errClosed
		}
		var current []byte
		var rev uint64
		if a := s.adverts[client]; a != nil {
			current, rev = a.encoded, a.rev
		}
		changed := !bytes.Equal(current, next.encoded)
		joining := s.autoJoin != "" && len(next.tools) > 0 && !s.members[s.autoJoin][client]
		held := s.present[client]
		s.mu.Unlock()
		if changed {
			if err := s.guard(ctx, client, session, held); err != nil {
				return false, err
			}
		}
		var written uint64
		var err error
		switch {
		case changed:
			written, err = s.records.PutAdvert(ctx, client, next.encoded, rev)
		case !joining:
			// Unchanged: only last_seen moves.
			written, err = s.records.PutSeen(ctx, client, now)
		}
		if errors.Is(err, records.ErrChanged) {
			if err := s.catchUp(ctx); err != nil {
				return false, err
			}
			continue
		}
		if err != nil {
			return false, storeFailed("advertise: storing the set of "+strconv.Quote(client), err)
		}
		if joining {
			rev, err := s.records.Join(ctx, s.autoJoin, client)
			if err != nil && !errors.Is(err, records.ErrChanged) { // joined by another call meanwhile
				return false, storeFailed("advertise: joining "+strconv.Quote(client)+" to "+strconv.Quote(s.autoJoin), err)
			}
			written = max(written, rev)
		}
		return changed, s.waitApplied(ctx, written)
	}
	return false, status.Errorf(codes.Aborted, "advertise: the set of %q kept changing under this call; advertise again", client)
}

// guard is the serving guard (docs/design.md §3): while client holds a
// read, only that read's session may change its set, because the machine
// serving the read would otherwise never learn it was disarmed. A refusal
// is confirmed against the bucket itself, since the view may not yet have
// heard that the read ended.
func (s *state) guard(ctx context.Context, client, session string, held *presence.Read) error {
	if held == nil || (session != "" && held.Session == session) {
		return nil
	}
	now, err := s.presence.current(ctx, client)
	switch {
	case err != nil:
		return storeFailed("advertise: reading the presence of "+strconv.Quote(client), err)
	case now == nil || (session != "" && now.Session == session):
		return nil
	case session == "":
		return status.Errorf(codes.FailedPrecondition,
			"advertise: %q holds a follow read, so a different set may come only from that read's session; pass the session the read was opened with, or close the read first", client)
	}
	return status.Errorf(codes.FailedPrecondition,
		"advertise: %q holds a follow read, but not in session %q; a different set may come only from the session holding the read", client, session)
}

// setMembership adds (join) or removes a membership; it returns whether
// anything changed.
func (s *state) setMembership(ctx context.Context, m records.Member, join bool) (bool, error) {
	for range writeAttempts {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return false, errClosed
		}
		member := s.members[m.Workspace][m.Client]
		s.mu.Unlock()
		if member == join {
			return false, nil
		}
		var rev uint64
		var err error
		if join {
			rev, err = s.records.Join(ctx, m.Workspace, m.Client)
		} else {
			rev, err = s.records.Leave(ctx, m.Workspace, m.Client)
		}
		if errors.Is(err, records.ErrChanged) {
			if err := s.catchUp(ctx); err != nil {
				return false, err
			}
			continue
		}
		if err != nil {
			return false, storeFailed("storing the membership of "+strconv.Quote(m.Client)+" in workspace "+strconv.Quote(m.Workspace), err)
		}
		return true, s.waitApplied(ctx, rev)
	}
	return false, status.Errorf(codes.Aborted, "the membership of %q in workspace %q kept changing under this call; try again", m.Client, m.Workspace)
}
