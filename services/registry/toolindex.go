package registry

import (
	"slices"
	"strings"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
)

// toolIndex is a workspace's tools sorted by presented name, as they stood
// at revision rev of the records bucket. ListTools pages through it, so
// reading a large workspace page by page sorts it once, not once a page.
type toolIndex struct {
	rev  uint64
	refs []toolRef
}

// toolRef is one tool of the index. Presence is not in it: it changes
// without the revision moving, and is read when a page is built.
type toolRef struct {
	name, client string
	tool         *registryv1.Tool
	changed      []string // fields changed since the pin, served under warn
}

// toolsOf returns workspace ws's index at the current revision, building
// it when there is none. Call with s.mu held; it is released while the
// tools are sorted, and held again when toolsOf returns.
func (s *state) toolsOf(ws string) *toolIndex {
	rev := s.applied
	if idx := s.toolIndexes[ws]; idx != nil && idx.rev == rev {
		return idx
	}
	var refs []toolRef
	for c := range s.members[ws] {
		if a := s.adverts[c]; a != nil {
			for i, t := range a.tools {
				if !s.served(ws, c, t.GetName()) {
					continue // held: neither listed nor callable (pins.go)
				}
				refs = append(refs, toolRef{name: a.names[i], client: c, tool: t, changed: s.pinned[ws][c][t.GetName()].GetChanged()})
			}
		}
	}
	// Sorting needs nothing the lock guards (stored sets never change); it
	// runs unlocked so a large workspace does not hold up advertisers.
	s.mu.Unlock()
	slices.SortFunc(refs, func(a, b toolRef) int { return strings.Compare(a.name, b.name) })
	s.mu.Lock()
	idx := &toolIndex{rev: rev, refs: refs}
	if s.applied == rev {
		// Indexes of an older revision are of no more use: drop them, so
		// the cache holds only workspaces read since the last change.
		for w, old := range s.toolIndexes {
			if old.rev != rev {
				delete(s.toolIndexes, w)
			}
		}
		s.toolIndexes[ws] = idx
	}
	return idx
}
