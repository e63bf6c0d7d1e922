package registry

import (
	"bytes"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/switchboard-run/switchboard/services/registry/internal/store"
)

// advertise puts a checked set in force for client. It returns whether the
// set in force changed.
func (s *state) advertise(client string, next *advert, session string, now time.Time) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false, errClosed
	}
	var current []byte
	if a := s.adverts[client]; a != nil {
		current = a.encoded
	}
	changed := !bytes.Equal(current, next.encoded)
	if changed {
		if err := s.guard(client, session); err != nil {
			return false, err
		}
	}
	join := store.Membership{Workspace: s.autoJoin, Client: client}
	joining := s.autoJoin != "" && len(next.tools) > 0 && !s.members[join.Workspace][client]
	if !changed && !joining {
		s.touch(client, now)
		return false, nil
	}
	err := s.store.Update(func(tx *store.Tx) error {
		if changed {
			if err := tx.PutAdvert(client, next.encoded); err != nil {
				return err
			}
			if err := tx.PutSeen(client, now); err != nil {
				return err
			}
		}
		if joining {
			return tx.PutMember(join)
		}
		return nil
	})
	if err != nil {
		return false, status.Errorf(codes.Internal, "advertise: storing the set of %q failed, so the set in force is unchanged: %v", client, err)
	}
	s.seen[client] = now
	if changed {
		delete(s.unsaved, client)
		s.setAdvert(client, next)
		s.publishAdvertised(client)
	} else {
		s.unsaved[client] = true
	}
	if joining {
		s.addMember(join)
		s.publishJoined(join)
	}
	return changed, nil
}

// guard is the serving guard (DESIGN §3): while client holds a follow read,
// only that read's session may change its set, because the machine serving
// the read would otherwise never learn it was disarmed.
func (s *state) guard(client, session string) error {
	r := s.present[client]
	if r == nil {
		return nil
	}
	if session == "" {
		return status.Errorf(codes.FailedPrecondition,
			"advertise: %q holds a follow read, so a different set may come only from that read's session; pass the session the read was opened with, or close the read first", client)
	}
	if r.sessions[session] == 0 {
		return status.Errorf(codes.FailedPrecondition,
			"advertise: %q holds a follow read, but not in session %q; a different set may come only from the session holding the read", client, session)
	}
	return nil
}

// setMembership adds (join) or removes a membership; it returns whether
// anything changed.
func (s *state) setMembership(m store.Membership, join bool) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false, errClosed
	}
	if s.members[m.Workspace][m.Client] == join {
		return false, nil
	}
	err := s.store.Update(func(tx *store.Tx) error {
		if join {
			return tx.PutMember(m)
		}
		return tx.DeleteMember(m)
	})
	if err != nil {
		return false, status.Errorf(codes.Internal, "storing the membership of %q in workspace %q failed, so nothing changed: %v", m.Client, m.Workspace, err)
	}
	if join {
		s.addMember(m)
		s.publishJoined(m)
	} else {
		s.removeMember(m)
		s.publishLeft(m)
	}
	return true, nil
}

// readKey is one kind of follow read a presence stream reported open.
type readKey struct{ client, session string }

// contribution is what one presence stream holds open, so that all of it
// can be withdrawn when the stream ends. It is guarded by state.mu.
type contribution map[readKey]int

// openRead counts a follow read opened.
func (s *state) openRead(c contribution, k readKey, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c[k]++
	r := s.present[k.client]
	if r == nil {
		r = &reads{sessions: map[string]int{}}
		s.present[k.client] = r
	}
	r.count++
	if k.session != "" {
		r.sessions[k.session]++
	}
	s.touch(k.client, now)
	if r.count == 1 {
		s.publishPresence(k.client, true)
	}
}

// closeRead counts a follow read closed. A close this stream never opened
// is ignored: it cannot take away another stream's read.
func (s *state) closeRead(c contribution, k readKey, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c[k] == 0 {
		return
	}
	if c[k]--; c[k] == 0 {
		delete(c, k)
	}
	s.release(k, now)
}

// withdraw releases everything a presence stream held: the stream ended, and
// a mailbox that is gone leaves no ghost presence.
func (s *state) withdraw(c contribution, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, n := range c {
		for range n {
			s.release(k, now)
		}
		delete(c, k)
	}
}

func (s *state) release(k readKey, now time.Time) {
	r := s.present[k.client]
	r.count--
	if k.session != "" {
		if r.sessions[k.session]--; r.sessions[k.session] == 0 {
			delete(r.sessions, k.session)
		}
	}
	s.touch(k.client, now)
	if r.count == 0 {
		delete(s.present, k.client)
		s.publishPresence(k.client, false)
	}
}
