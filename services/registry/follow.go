package registry

import (
	"bytes"
	"context"
	"errors"
	"time"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/lib/retry"
	"github.com/switchboard-run/switchboard/kit/suite/presence"
	"github.com/switchboard-run/switchboard/services/registry/internal/records"
)

// Following the buckets. Each replica's view is built from two watches: the
// records bucket (sets, memberships, tokens) and the presence bucket (reads
// the mailbox holds). A change is applied and published to the registry's
// own watchers under one lock, in the bucket's order.

// follow keeps both watches until ctx ends. ready is closed once both have
// delivered their snapshot, so the registry serves no call from a view
// that is still filling. A watch that breaks (NATS lost) is opened again; the
// view it rebuilds replaces the old one and every watcher is told to resync.
func (s *state) follow(ctx context.Context, ready chan<- struct{}) {
	recordsSynced, presenceSynced := make(chan struct{}), make(chan struct{})
	go s.followRecords(ctx, recordsSynced)
	go s.followPresence(ctx, presenceSynced)
	for _, c := range []chan struct{}{recordsSynced, presenceSynced} {
		select {
		case <-c:
		case <-ctx.Done():
			return
		}
	}
	close(ready)
}

// rewatch is the backoff of a broken watch (NATS lost): capped at a second,
// so the view is back within one of NATS returning, and from the start
// again once a watch has delivered its snapshot.
var rewatch = retry.Loop{Policy: retry.Policy{Base: 250 * time.Millisecond, Max: time.Second, Multiplier: 2, Jitter: 0.2, Stable: 30 * time.Second}}

func (s *state) followRecords(ctx context.Context, synced chan struct{}) {
	first := true
	loop := rewatch
	loop.OnRetry = func(err error, wait time.Duration) {
		s.log.Warn("the watch of the registry's records ended; watching again", "err", err, "in", wait)
	}
	_ = loop.Forever(ctx, func(ctx context.Context) (bool, error) {
		fresh := newView()
		live := false
		watching, stop := context.WithCancel(ctx)
		defer stop()
		go func() {
			select {
			case <-s.stalled:
				stop()
			case <-watching.Done():
			}
		}()
		err := s.records.Watch(watching, func(c records.Change) {
			if live {
				s.applyRecord(c)
				return
			}
			fresh.add(c, s.log)
		}, func() {
			live = true
			s.replaceRecords(fresh, !first)
			if first {
				first = false
				close(synced)
			}
		}, func(key string, err error) {
			s.log.Warn("a record the registry does not read was skipped", "key", key, "err", err)
		})
		if ctx.Err() == nil && watching.Err() != nil {
			err = errStalled
		}
		return live, err
	})
}

// staleAfter is how long a write waits for a view that applies nothing
// before the watch is taken for stalled. A JetStream watch whose stream lost its
// quorum resumes by itself only after missed heartbeats, 10–15 s after the
// quorum is back; opened again, it reads the bucket at once.
const staleAfter = 2 * time.Second

// errStalled ends a watch that did not deliver a write this registry made.
var errStalled = errors.New("the watch did not deliver this registry's own write within " + staleAfter.String())

// errNoPresence is an attempt that found no presence bucket: no mailbox has
// declared it yet, so nobody holds a read. It is looked for again soon.
var errNoPresence = errors.New("no mailbox has declared the presence bucket yet")

func (s *state) followPresence(ctx context.Context, synced chan struct{}) {
	first, missing := true, false
	loop := rewatch
	loop.Ceiling = func(err error) time.Duration {
		if errors.Is(err, errNoPresence) {
			return rewatch.Policy.Base
		}
		return 0
	}
	loop.OnRetry = func(err error, wait time.Duration) {
		if !errors.Is(err, errNoPresence) {
			s.log.Warn("the watch of presence ended; watching again", "err", err, "in", wait)
		}
	}
	_ = loop.Forever(ctx, func(ctx context.Context) (bool, error) {
		kv, err := s.presence.get(ctx)
		if kv == nil && err == nil {
			if first {
				first, missing = false, true
				close(synced)
			}
			return false, errNoPresence
		}
		table := presence.NewTable()
		// A bucket declared after the view was taken as empty: what it
		// holds is news, applied as it comes.
		live := missing
		missing = false
		caughtUp := false
		if err == nil {
			err = presence.Watch(ctx, kv, func(e presence.Event) {
				if live {
					s.applyPresence(table, e)
					return
				}
				table.Apply(e)
			}, func() {
				caughtUp = true
				if !live {
					live = true
					s.replacePresence(table.All(), !first)
				}
				if first {
					first = false
					close(synced)
				}
			})
		}
		return caughtUp, err
	})
}

// applyRecord applies one live change of the records bucket.
func (s *state) applyRecord(c records.Change) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// The revision first: the events below carry it, and the callers it
	// wakes read the view only once the lock is free.
	s.setApplied(c.Revision)
	switch {
	case c.Advert != nil:
		client := c.Advert.Client
		var next *advert
		if !c.Deleted {
			a, err := decodeAdvert(client, c.Advert.Encoded)
			if err != nil {
				s.log.Warn("a stored set the registry cannot read was skipped", "client", client, "err", err)
				break
			}
			a.rev, a.at = c.Revision, c.At
			next = a
		}
		if old := s.adverts[client]; old != nil && next != nil && bytes.Equal(old.encoded, next.encoded) {
			old.rev, old.at = next.rev, next.at
			break
		}
		s.setAdvert(client, next)
		s.touch(client, c.At)
		// The pins first: a changed tool is held before its new definition
		// is announced.
		s.repinClient(client, true)
		s.publishAdvertised(client)
	case c.Seen != nil:
		if !c.Deleted {
			s.touch(c.Seen.Client, c.Seen.At)
		}
	case c.Member != nil:
		if c.Deleted {
			if s.removeMember(*c.Member) {
				s.repin(c.Member.Workspace, c.Member.Client, false) // its watchers drop the client
				s.publishLeft(*c.Member)
			}
		} else if s.addMember(*c.Member) {
			s.repin(c.Member.Workspace, c.Member.Client, true)
			s.publishJoined(*c.Member)
		}
	case c.Token != nil:
		if c.Deleted {
			delete(s.tokens, c.Token.Hash)
		} else {
			s.tokens[c.Token.Hash] = c.Token.Record
		}
	case c.Grant != nil:
		s.setGrant(c.Grant.Identity, c.Grant.Record)
		s.publishGranted(c.Grant.Identity)
	case c.Group != nil:
		s.setGroup(c.Group.Workspace, c.Group.Name, c.Group.Record)
		s.publishGrouped(c.Group.Workspace, c.Group.Name)
	case c.Pins != nil:
		s.setPins(c.Pins.Workspace, c.Pins.Client, c.Pins.Set, c.Revision)
		s.repin(c.Pins.Workspace, c.Pins.Client, true)
	case c.Policy != nil:
		s.setPolicy(c.Policy.Workspace, c.Policy.Policy)
	case c.AuditPolicy != nil:
		s.setAuditPolicy(c.AuditPolicy.Workspace, c.AuditPolicy.Policy)
		s.publishAuditPolicy(c.AuditPolicy.Workspace)
	}
}

// applyPresence applies one live change of the presence bucket.
func (s *state) applyPresence(table *presence.Table, e presence.Event) {
	changes := table.Apply(e)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range changes {
		was := s.present[c.Client] != nil
		if c.Present != nil {
			s.present[c.Client] = c.Present
		} else {
			delete(s.present, c.Client)
		}
		s.touch(c.Client, c.Seen)
		if now := c.Present != nil; now != was {
			s.publishPresence(c.Client, now)
		}
	}
}

// view is a records snapshot being collected, before it replaces the
// state's.
type view struct {
	adverts map[string]*advert
	seen    map[string]time.Time
	members []records.Member
	tokens  map[string]*records.Token
	grants  []*registryv1.Grant
	groups  []*registryv1.Group
	pins    []pinsAt
	policy  map[string]registryv1.PinPolicy
	audits  map[string]*registryv1.AuditPolicy
	rev     uint64
}

// pinsAt is a stored pin set with the revision that stored it.
type pinsAt struct {
	records.Pins
	rev uint64
}

func newView() *view {
	return &view{adverts: map[string]*advert{}, seen: map[string]time.Time{}, tokens: map[string]*records.Token{}, policy: map[string]registryv1.PinPolicy{},
		audits: map[string]*registryv1.AuditPolicy{}}
}

func (v *view) add(c records.Change, log interface{ Warn(string, ...any) }) {
	v.rev = max(v.rev, c.Revision)
	if c.Deleted {
		return // a snapshot holds what exists
	}
	switch {
	case c.Advert != nil:
		a, err := decodeAdvert(c.Advert.Client, c.Advert.Encoded)
		if err != nil {
			log.Warn("a stored set the registry cannot read was skipped", "client", c.Advert.Client, "err", err)
			return
		}
		a.rev, a.at = c.Revision, c.At
		v.adverts[c.Advert.Client] = a
	case c.Seen != nil:
		v.seen[c.Seen.Client] = c.Seen.At
	case c.Member != nil:
		v.members = append(v.members, *c.Member)
	case c.Token != nil:
		v.tokens[c.Token.Hash] = c.Token
	case c.Grant != nil:
		v.grants = append(v.grants, c.Grant.Record)
	case c.Group != nil:
		v.groups = append(v.groups, c.Group.Record)
	case c.Pins != nil:
		v.pins = append(v.pins, pinsAt{Pins: *c.Pins, rev: c.Revision})
	case c.Policy != nil:
		v.policy[c.Policy.Workspace] = c.Policy.Policy
	case c.AuditPolicy != nil:
		v.audits[c.AuditPolicy.Workspace] = c.AuditPolicy.Policy
	}
}

// replaceRecords puts a snapshot in force. After a watch was lost (again),
// watchers of the registry may have missed changes: they are told to resync.
func (s *state) replaceRecords(v *view, again bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for client := range s.adverts {
		s.setAdvert(client, nil)
	}
	for client, a := range v.adverts {
		s.setAdvert(client, a)
	}
	for client, t := range v.seen {
		s.touch(client, t)
	}
	s.members, s.joined = map[string]map[string]bool{}, map[string]map[string]bool{}
	for _, m := range v.members {
		s.addMember(m)
	}
	s.tokens = map[string]*registryv1.Token{}
	for h, t := range v.tokens {
		s.tokens[h] = t.Record
	}
	s.grants = map[string]*grant{}
	for _, g := range v.grants {
		s.setGrant(g.GetIdentity(), g)
	}
	s.groups = map[string]map[string]*registryv1.Group{}
	for _, g := range v.groups {
		s.setGroup(g.GetWorkspace(), g.GetName(), g)
	}
	s.pinSets, s.policies, s.pinned = map[string]map[string]*pinSet{}, v.policy, map[string]map[string]map[string]*registryv1.Pin{}
	s.audits = v.audits
	for _, p := range v.pins {
		s.setPins(p.Workspace, p.Client, p.Set, p.rev)
	}
	for client := range s.joined {
		s.repinClient(client, false)
	}
	s.setApplied(v.rev)
	if again {
		s.hub.LoseAll("the registry's view of its records was rebuilt after NATS was lost")
	}
}

// replacePresence puts a presence snapshot in force.
func (s *state) replacePresence(all []presence.Change, again bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.present = map[string]*presence.Read{}
	for _, c := range all {
		if c.Present != nil {
			s.present[c.Client] = c.Present
		}
		s.touch(c.Client, c.Seen)
	}
	if again {
		s.hub.LoseAll("the registry's view of presence was rebuilt after NATS was lost")
	}
}
