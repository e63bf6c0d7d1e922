package registry

import (
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/services/registry/internal/records"
	"github.com/switchboard-run/switchboard/services/registry/internal/watch"
)

// The events below are built and published with s.mu held.

// toMembersOf sends an event about client to the watchers of everything
// and to the watchers of each workspace client belongs to.
func (s *state) toMembersOf(client string) func(string) bool {
	return func(ws string) bool { return ws == "" || s.members[ws][client] }
}

func advertisedEvent(rev uint64, client string, tools []*registryv1.Tool) *watch.Event {
	return &watch.Event{Revision: rev, Change: &registryv1.WatchToolsResponse_Advertised{
		Advertised: &registryv1.Advertised{Client: client, Tools: tools},
	}}
}

func presenceEvent(rev uint64, client string, present bool, at time.Time) *watch.Event {
	return &watch.Event{Revision: rev, Change: &registryv1.WatchToolsResponse_Presence{
		Presence: &registryv1.Presence{Client: client, Present: present, LastSeen: timestamppb.New(at)},
	}}
}

func membershipEvent(rev uint64, m records.Member, joined bool) *watch.Event {
	pm := &registryv1.Membership{Workspace: m.Workspace, Client: m.Client}
	if joined {
		return &watch.Event{Revision: rev, Change: &registryv1.WatchToolsResponse_Registered{Registered: pm}}
	}
	return &watch.Event{Revision: rev, Change: &registryv1.WatchToolsResponse_Unregistered{Unregistered: pm}}
}

func syncedEvent(rev uint64) *watch.Event {
	return &watch.Event{Revision: rev, Change: &registryv1.WatchToolsResponse_Synced{Synced: &registryv1.Synced{}}}
}

func resyncEvent(rev uint64, reason string) *watch.Event {
	return &watch.Event{Revision: rev, Change: &registryv1.WatchToolsResponse_Resync{Resync: &registryv1.Resync{Reason: reason}}}
}

// publishAdvertised announces client's set in force.
func (s *state) publishAdvertised(client string) {
	var tools []*registryv1.Tool
	if a := s.adverts[client]; a != nil {
		tools = a.tools
	}
	s.hub.Publish(advertisedEvent(s.applied, client, tools), s.toMembersOf(client))
}

// publishJoined announces a new membership. The watchers of that workspace
// did not follow the client until now, so they also get its set and its
// presence: a workspace's watcher always holds its members' whole state.
func (s *state) publishJoined(m records.Member) {
	rev := s.applied
	s.hub.Publish(membershipEvent(rev, m, true), func(ws string) bool { return ws == "" || ws == m.Workspace })
	only := func(ws string) bool { return ws == m.Workspace }
	if a := s.adverts[m.Client]; a != nil {
		s.hub.Publish(advertisedEvent(rev, m.Client, a.tools), only)
	}
	if s.present[m.Client] != nil {
		seen, _ := s.lastSeen(m.Client)
		s.hub.Publish(presenceEvent(rev, m.Client, true, seen), only)
	}
}

// publishLeft announces a membership removed. It goes to the watchers of
// that workspace too, though the client is no longer a member: they drop
// the client on it.
func (s *state) publishLeft(m records.Member) {
	s.hub.Publish(membershipEvent(s.applied, m, false), func(ws string) bool { return ws == "" || ws == m.Workspace })
}

// publishPresence announces client's presence after a 0↔1 change.
func (s *state) publishPresence(client string, present bool) {
	seen, _ := s.lastSeen(client)
	s.hub.Publish(presenceEvent(s.applied, client, present, seen), s.toMembersOf(client))
}

// snapshot is the state as a watcher of workspace ("" for everything) sees
// it: one advertised per client with a set, one registered per membership,
// one presence per present client, then synced; each carries the current
// revision.
func (s *state) snapshot(workspace string) []*watch.Event {
	rev := s.applied
	var clients []string
	if workspace == "" {
		clients = sortedKeys(s.adverts)
	} else {
		clients = sortedKeys(s.members[workspace])
	}
	var out []*watch.Event
	for _, c := range clients {
		if a := s.adverts[c]; a != nil {
			out = append(out, advertisedEvent(rev, c, a.tools))
		}
	}
	workspaces := []string{workspace}
	if workspace == "" {
		workspaces = sortedKeys(s.members)
	}
	for _, ws := range workspaces {
		for _, c := range sortedKeys(s.members[ws]) {
			out = append(out, membershipEvent(rev, records.Member{Workspace: ws, Client: c}, true))
		}
	}
	present := sortedKeys(s.present)
	for _, c := range present {
		if workspace == "" || s.members[workspace][c] {
			seen, _ := s.lastSeen(c)
			out = append(out, presenceEvent(rev, c, true, seen))
		}
	}
	return append(out, syncedEvent(rev))
}

// subscribe adds a watcher of workspace and returns it with its snapshot,
// taken together so that no change falls between them.
func (s *state) subscribe(workspace string) (*watch.Watcher, []*watch.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.hub.Subscribe(workspace)
	return w, s.snapshot(workspace)
}

// resnapshot empties a lost watcher's buffer and returns what replaces it:
// the resync notice with its reason, then a fresh snapshot, taken together
// with the reset so that no change falls between them.
func (s *state) resnapshot(w *watch.Watcher, reason string) []*watch.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	w.Reset()
	return append([]*watch.Event{resyncEvent(s.applied, reason)}, s.snapshot(w.Workspace)...)
}
