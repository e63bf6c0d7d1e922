package registry

import (
	"strconv"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/services/registry/internal/records"
	"github.com/switchboard-run/switchboard/services/registry/internal/watch"
)

// The events below are built and published with s.mu held.

// toMembersOf sends an event about client to the watchers of everything
// that may see it and to the watchers of each workspace it belongs to.
func (s *state) toMembersOf(client string) func(*watch.Watcher) bool {
	return func(w *watch.Watcher) bool {
		if w.Workspace == "" {
			return s.visible(w.Scope.Sees, client)
		}
		return s.members[w.Workspace][client]
	}
}

// toWorkspace sends an event about workspace ws to its watchers and to the
// watchers of everything that may see it.
func toWorkspace(ws string) func(*watch.Watcher) bool {
	return func(w *watch.Watcher) bool {
		return w.Workspace == ws || (w.Workspace == "" && w.Scope.Sees.Sees(ws))
	}
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

func grantedEvent(rev uint64, g *registryv1.Grant) *watch.Event {
	return &watch.Event{Revision: rev, Change: &registryv1.WatchToolsResponse_Granted{Granted: g}}
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
// So does a watcher of everything that sees only some workspaces, when the
// client is new to it.
func (s *state) publishJoined(m records.Member) {
	rev := s.applied
	s.hub.Publish(membershipEvent(rev, m, true), toWorkspace(m.Workspace))
	only := func(w *watch.Watcher) bool {
		if w.Workspace == "" {
			sees := w.Scope.Sees
			return !sees.All() && sees.Sees(m.Workspace) && !s.visibleBesides(sees, m.Client, m.Workspace)
		}
		return w.Workspace == m.Workspace
	}
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
// the client on it (as a watcher of some workspaces drops a client that
// left the last of them).
func (s *state) publishLeft(m records.Member) {
	s.hub.Publish(membershipEvent(s.applied, m, false), toWorkspace(m.Workspace))
}

// publishGranted announces name's grant as it now stands to the watchers
// shown grants, and sends the watchers name opened without stated
// workspaces a fresh snapshot: what they may see changed.
func (s *state) publishGranted(name string) {
	g := &registryv1.Grant{Identity: name}
	if rec := s.grants[name]; rec != nil {
		g = rec.record
	}
	s.hub.Publish(grantedEvent(s.applied, g), func(w *watch.Watcher) bool { return w.Scope.Grants })
	s.hub.LoseIf(func(w *watch.Watcher) bool {
		return w.Scope.Caller.Name == name && w.Scope.Caller.Workspaces == nil
	}, "the grant of "+strconv.Quote(name)+" changed, and with it what this watch may see")
}

// publishPresence announces client's presence after a 0↔1 change.
func (s *state) publishPresence(client string, present bool) {
	seen, _ := s.lastSeen(client)
	s.hub.Publish(presenceEvent(s.applied, client, present, seen), s.toMembersOf(client))
}

// snapshot is the state as a watcher of workspace ("" for everything) with
// scope sees it: one advertised per client with a set, one registered per
// membership, one presence per present client, one grouped per tool group
// of the workspaces shown, one pinned per tool of theirs not served as
// pinned, one audit_policy per workspace it may see whose trail records
// inputs and outputs, one granted per grant (when it is shown grants),
// then synced; each carries the current revision.
func (s *state) snapshot(workspace string, scope watch.Scope) []*watch.Event {
	rev := s.applied
	shown := func(c string) bool { return s.members[workspace][c] }
	clients := sortedKeys(s.members[workspace])
	workspaces := []string{workspace}
	if workspace == "" {
		shown = func(c string) bool { return s.visible(scope.Sees, c) }
		clients = sortedKeys(s.adverts)
		workspaces = nil
		for _, ws := range sortedKeys(s.members) {
			if scope.Sees.Sees(ws) {
				workspaces = append(workspaces, ws)
			}
		}
	}
	var out []*watch.Event
	for _, c := range clients {
		if a := s.adverts[c]; a != nil && shown(c) {
			out = append(out, advertisedEvent(rev, c, a.tools))
		}
	}
	for _, ws := range workspaces {
		for _, c := range sortedKeys(s.members[ws]) {
			out = append(out, membershipEvent(rev, records.Member{Workspace: ws, Client: c}, true))
		}
	}
	for _, c := range sortedKeys(s.present) {
		if shown(c) {
			seen, _ := s.lastSeen(c)
			out = append(out, presenceEvent(rev, c, true, seen))
		}
	}
	out = append(out, s.groupEvents(rev, workspace, scope.Sees)...)
	for _, ws := range workspaces {
		out = append(out, s.pinEvents(rev, ws)...)
	}
	out = append(out, s.auditPolicyEvents(rev, workspace, scope.Sees)...)
	if scope.Grants {
		for _, name := range sortedKeys(s.grants) {
			out = append(out, grantedEvent(rev, s.grants[name].record))
		}
	}
	return append(out, syncedEvent(rev))
}

// scopeOf is what a watch of workspace opened by id may see, or the
// refusal of a workspace outside it. Call with s.mu held.
func (s *state) scopeOf(workspace string, id identity.Identity) (watch.Scope, error) {
	sees := id.Resolve(s.grantOf)
	if workspace != "" && !sees.Sees(workspace) {
		return watch.Scope{}, unknownWorkspace(workspace)
	}
	grants := workspace == "" && (id.Grade == identity.Admin || id.Grade == identity.Service)
	return watch.Scope{Caller: id, Sees: sees, Grants: grants}, nil
}

// subscribe adds a watcher of workspace for id and returns it with its
// snapshot, taken together so that no change falls between them.
func (s *state) subscribe(workspace string, id identity.Identity) (*watch.Watcher, []*watch.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	scope, err := s.scopeOf(workspace, id)
	if err != nil {
		return nil, nil, err
	}
	w := s.hub.Subscribe(workspace, scope)
	return w, s.snapshot(workspace, scope), nil
}

// resnapshot empties a lost watcher's buffer and returns what replaces it:
// the resync notice with its reason, then a fresh snapshot, taken together
// with the reset so that no change falls between them. What the watcher
// may see is read again (a grant may have changed); a workspace it may no
// longer see ends the watch, absent.
func (s *state) resnapshot(w *watch.Watcher, reason string) ([]*watch.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	scope, err := s.scopeOf(w.Workspace, w.Scope.Caller)
	if err != nil {
		return nil, err
	}
	w.Scope = scope
	w.Reset()
	return append([]*watch.Event{resyncEvent(s.applied, reason)}, s.snapshot(w.Workspace, scope)...), nil
}
