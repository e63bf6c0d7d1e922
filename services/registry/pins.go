package registry

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/pins"
	"github.com/switchboard-run/switchboard/services/registry/internal/records"
	"github.com/switchboard-run/switchboard/services/registry/internal/watch"
)

// Tool pins (docs/security.md, "Tool pins"): each workspace keeps the
// definition of every tool of its members as first advertised there (or as
// an admin approved it since), and how the definition advertised now
// stands against it decides whether the tool is served.

// pinSet is one client's stored pins in one workspace.
type pinSet struct {
	byTool map[string]*registryv1.Pin // tool name → stored pin
	rev    uint64                     // the bucket revision that stored it
}

// setPins puts a stored pin set in force (nil removes it). Call with s.mu
// held.
func (s *state) setPins(ws, client string, set *registryv1.PinSet, rev uint64) {
	if set == nil {
		delete(s.pinSets[ws], client)
		if len(s.pinSets[ws]) == 0 {
			delete(s.pinSets, ws)
		}
		return
	}
	ps := &pinSet{byTool: make(map[string]*registryv1.Pin, len(set.GetPins())), rev: rev}
	for _, p := range set.GetPins() {
		ps.byTool[p.GetTool()] = p
	}
	// A pin of the definition in force shares its proto: a parked host
	// costs the registry its set once, not twice.
	if a := s.adverts[client]; a != nil {
		for i, t := range a.tools {
			if p := ps.byTool[t.GetName()]; p != nil && p.GetFingerprint() == a.fps[i] {
				p.Pinned = t
			}
		}
	}
	if s.pinSets[ws] == nil {
		s.pinSets[ws] = map[string]*pinSet{}
	}
	s.pinSets[ws][client] = ps
}

// setPolicy puts a workspace's policy in force and restates its members'
// pins. Call with s.mu held.
func (s *state) setPolicy(ws string, p registryv1.PinPolicy) {
	if p == registryv1.PinPolicy_PIN_POLICY_UNSPECIFIED {
		delete(s.policies, ws)
	} else {
		s.policies[ws] = p
	}
	for client := range s.members[ws] {
		s.repin(ws, client, true)
	}
}

// derivePins is how client's advertised tools stand against their pins in
// ws: the pins whose state is not PIN_STATE_PINNED, by tool. Call with s.mu
// held.
func (s *state) derivePins(ws, client string) map[string]*registryv1.Pin {
	a, set := s.adverts[client], s.pinSets[ws][client]
	if a == nil || set == nil || !s.members[ws][client] {
		return nil
	}
	var out map[string]*registryv1.Pin
	for i, t := range a.tools {
		stored := set.byTool[t.GetName()]
		if stored == nil {
			continue // not pinned yet: served, and pinned by the advertising call
		}
		st := pins.State(stored, a.fps[i], s.policies[ws])
		if st == registryv1.PinState_PIN_STATE_PINNED {
			continue
		}
		if out == nil {
			out = map[string]*registryv1.Pin{}
		}
		out[t.GetName()] = derived(stored, a.names[i], st, t, a.fps[i])
	}
	return out
}

// derived is a stored pin with its state against tool t (fingerprint fp).
// Stored protos are shared, never modified.
func derived(stored *registryv1.Pin, presented string, st registryv1.PinState, t *registryv1.Tool, fp string) *registryv1.Pin {
	p := &registryv1.Pin{
		Workspace: stored.GetWorkspace(), Client: stored.GetClient(), Tool: stored.GetTool(), PresentedName: presented,
		Pinned: stored.GetPinned(), Fingerprint: stored.GetFingerprint(), PinnedAt: stored.GetPinnedAt(),
		PinnedBy: stored.GetPinnedBy(), Rejected: stored.Rejected, State: st,
	}
	if t != nil && fp != stored.GetFingerprint() {
		p.Advertised, p.AdvertisedFingerprint, p.Changed = t, fp, pins.Changed(stored.GetPinned(), t)
	}
	return p
}

// repin recomputes the states of client's tools in ws and, with publish,
// announces each that changed to the workspace's watchers. Call with s.mu
// held.
func (s *state) repin(ws, client string, publish bool) {
	next := s.derivePins(ws, client)
	old := s.pinned[ws][client]
	if publish {
		for _, tool := range sortedKeys(next) {
			if !proto.Equal(old[tool], next[tool]) {
				s.hub.Publish(pinEvent(s.applied, next[tool]), toWorkspace(ws))
			}
		}
		for _, tool := range sortedKeys(old) {
			if next[tool] == nil {
				cleared := proto.CloneOf(old[tool])
				cleared.State, cleared.Advertised, cleared.AdvertisedFingerprint, cleared.Changed = registryv1.PinState_PIN_STATE_PINNED, nil, "", nil
				s.hub.Publish(pinEvent(s.applied, cleared), toWorkspace(ws))
			}
		}
	}
	if len(next) == 0 {
		delete(s.pinned[ws], client)
		if len(s.pinned[ws]) == 0 {
			delete(s.pinned, ws)
		}
		return
	}
	if s.pinned[ws] == nil {
		s.pinned[ws] = map[string]map[string]*registryv1.Pin{}
	}
	s.pinned[ws][client] = next
}

// repinClient restates client's tools in every workspace it belongs to.
// Call with s.mu held.
func (s *state) repinClient(client string, publish bool) {
	for _, ws := range sortedKeys(s.joined[client]) {
		s.repin(ws, client, publish)
	}
}

// served reports whether client's tool is listed and callable in ws. Call
// with s.mu held.
func (s *state) served(ws, client, tool string) bool {
	p := s.pinned[ws][client][tool]
	return p == nil || pins.Served(p.GetState())
}

// heldFor is the pin that keeps client's tool from a caller who sees sees:
// nil when a workspace it sees serves the tool, else the first that holds
// it. Call with s.mu held.
func (s *state) heldFor(sees identity.Workspaces, client, tool string) *registryv1.Pin {
	var held *registryv1.Pin
	for _, ws := range sortedKeys(s.joined[client]) {
		if !sees.Sees(ws) {
			continue
		}
		if s.served(ws, client, tool) {
			return nil
		}
		if held == nil {
			held = s.pinned[ws][client][tool]
		}
	}
	return held
}

func pinEvent(rev uint64, p *registryv1.Pin) *watch.Event {
	return &watch.Event{Revision: rev, Change: &registryv1.WatchToolsResponse_Pinned{Pinned: p}}
}

// pinEvents are the snapshot's pins of workspace ws: one per tool whose
// state is not PIN_STATE_PINNED. Call with s.mu held.
func (s *state) pinEvents(rev uint64, ws string) []*watch.Event {
	var out []*watch.Event
	for _, c := range sortedKeys(s.pinned[ws]) {
		for _, tool := range sortedKeys(s.pinned[ws][c]) {
			out = append(out, pinEvent(rev, s.pinned[ws][c][tool]))
		}
	}
	return out
}

// pinWrite is one client's pin set to store in one workspace.
type pinWrite struct {
	ws  string
	set *registryv1.PinSet
	rev uint64
}

// pinWrites are the pin sets client's advertised tools need: a pin for
// each tool its workspaces have none of, and under policy off the pin of
// each tool that changed. Call with s.mu held.
func (s *state) pinWrites(client string, now time.Time) []pinWrite {
	a := s.adverts[client]
	if a == nil {
		return nil
	}
	var out []pinWrite
	for _, ws := range sortedKeys(s.joined[client]) {
		current := s.pinSets[ws][client]
		byTool := map[string]*registryv1.Pin{}
		var rev uint64
		if current != nil {
			for k, v := range current.byTool {
				byTool[k] = v
			}
			rev = current.rev
		}
		off := pins.PolicyOf(s.policies[ws]) == registryv1.PinPolicy_PIN_POLICY_OFF
		changed := false
		for i, t := range a.tools {
			if p := byTool[t.GetName()]; p != nil && (p.GetFingerprint() == a.fps[i] || !off) {
				continue
			}
			byTool[t.GetName()] = &registryv1.Pin{Workspace: ws, Client: client, Tool: t.GetName(), PresentedName: a.names[i],
				Pinned: t, Fingerprint: a.fps[i], PinnedAt: timestamppb.New(now)}
			changed = true
		}
		if !changed {
			continue
		}
		set := boundedSet(byTool, a)
		if n := proto.Size(set); n > maxPinSetBytes {
			// A set near the record bound has no room for its pins: its
			// tools are served unpinned rather than the set refused.
			s.log.Warn("a client's tools are too large to pin; they are served unpinned", "client", client, "workspace", ws, "bytes", n, "bound", maxPinSetBytes)
			continue
		}
		out = append(out, pinWrite{ws: ws, set: set, rev: rev})
	}
	return out
}

// maxPinSetBytes bounds a stored pin set below the bucket's record limit.
const maxPinSetBytes = maxRecordBytes * 9 / 10

// boundedSet is byTool as a stored set, sorted by tool. Pins of tools no
// longer advertised are kept (a tool withdrawn and advertised again changed
// is still a change) while the set fits its bound, the oldest dropped first.
func boundedSet(byTool map[string]*registryv1.Pin, a *advert) *registryv1.PinSet {
	advertised := make(map[string]bool, len(a.tools))
	for _, t := range a.tools {
		advertised[t.GetName()] = true
	}
	set := &registryv1.PinSet{}
	var gone []*registryv1.Pin
	for _, tool := range sortedKeys(byTool) {
		if advertised[tool] {
			set.Pins = append(set.Pins, byTool[tool])
		} else {
			gone = append(gone, byTool[tool])
		}
	}
	slices.SortStableFunc(gone, func(x, y *registryv1.Pin) int { return y.GetPinnedAt().AsTime().Compare(x.GetPinnedAt().AsTime()) })
	size := proto.Size(set)
	for _, p := range gone {
		if size += proto.Size(p) + 8; size > maxPinSetBytes {
			break
		}
		set.Pins = append(set.Pins, p)
	}
	slices.SortFunc(set.Pins, func(x, y *registryv1.Pin) int { return strings.Compare(x.GetTool(), y.GetTool()) })
	return set
}

// pinAdvertised stores the pins client's advertised tools need in each of
// its workspaces, and waits until the view holds them. Another replica may
// pin the same client at once: a write that finds the set moved on catches
// up and decides again.
func (s *state) pinAdvertised(ctx context.Context, client string) error {
	for range writeAttempts {
		s.mu.Lock()
		writes := s.pinWrites(client, time.Now().UTC())
		s.mu.Unlock()
		var last uint64
		conflict := false
		for _, w := range writes {
			rev, err := s.records.PutPins(ctx, w.ws, client, w.set, w.rev)
			if errors.Is(err, records.ErrChanged) {
				conflict = true
				continue
			}
			if err != nil {
				return storeFailed("pinning the tools of "+strconv.Quote(client)+" in workspace "+strconv.Quote(w.ws), err)
			}
			last = max(last, rev)
		}
		if err := s.waitApplied(ctx, last); err != nil || !conflict {
			return err
		}
		if err := s.catchUp(ctx); err != nil {
			return err
		}
	}
	return nil
}
