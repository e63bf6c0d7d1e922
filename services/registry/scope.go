package registry

import (
	"context"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
)

// What a caller may see (docs/design.md §4). Outside its workspaces a
// workspace, a client or a tool is absent: the refusal is the sentence of
// one that does not exist.

// setGrant puts name's grant record in force (nil removes it). A record
// the registry cannot read grants nothing, and says so in the log. Call with
// s.mu held.
func (s *state) setGrant(name string, rec *registryv1.Grant) {
	if rec == nil {
		delete(s.grants, name)
		return
	}
	sees, err := identity.ParseWorkspaces(rec.GetWorkspaces())
	if err != nil {
		s.log.Warn("a grant the registry cannot read grants nothing", "identity", name, "err", err)
		delete(s.grants, name)
		return
	}
	s.grants[name] = &grant{record: rec, sees: sees}
}

// grantOf is identity.Granted over the view. Call with s.mu held.
func (s *state) grantOf(name string) (identity.Workspaces, bool) {
	if g := s.grants[name]; g != nil {
		return g.sees, true
	}
	return identity.Workspaces{}, false
}

// caller returns the caller of the RPC in ctx and what it may see. It
// takes s.mu.
func (s *state) caller(ctx context.Context) (identity.Identity, identity.Workspaces, error) {
	id, err := identity.Caller(ctx)
	if err != nil {
		return identity.Identity{}, identity.Workspaces{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return id, id.Resolve(s.grantOf), nil
}

// lockMembers locks s for a read of ws and returns its clients, when ws has
// members and the caller may see it; on an error s is left unlocked.
func (s *state) lockMembers(ctx context.Context, ws string) (map[string]bool, error) {
	_, sees, err := s.caller(ctx)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if members := s.members[ws]; len(members) > 0 && sees.Sees(ws) {
		return members, nil
	}
	s.mu.Unlock()
	return nil, unknownWorkspace(ws)
}

// visible reports whether client sits in a workspace sees holds; with every
// workspace, every client is (one in no workspace too). Call with s.mu
// held.
func (s *state) visible(sees identity.Workspaces, client string) bool {
	if sees.All() {
		return true
	}
	for ws := range s.joined[client] {
		if sees.Sees(ws) {
			return true
		}
	}
	return false
}

// visibleBesides is visible, not counting workspace ws. Call with s.mu
// held.
func (s *state) visibleBesides(sees identity.Workspaces, client, ws string) bool {
	for other := range s.joined[client] {
		if other != ws && sees.Sees(other) {
			return true
		}
	}
	return false
}
