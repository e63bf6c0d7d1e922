package identity

import (
	"fmt"
	"slices"
	"strings"

	"github.com/switchboard-run/switchboard/kit/suite/names"
)

// EveryWorkspace is how a grant names every workspace.
const EveryWorkspace = "*"

// MaxGrantedWorkspaces bounds the workspaces one grant names; `*` names
// them all.
const MaxGrantedWorkspaces = 256

// Workspaces is what an identity may see (docs/design.md §4): every
// workspace, or the ones named. The zero value is none. Outside them a
// client, a tool or an invocation is absent, never "forbidden".
type Workspaces struct {
	all   bool
	names []string // sorted, unique; nil when all
}

// AllWorkspaces is every workspace.
func AllWorkspaces() Workspaces { return Workspaces{all: true} }

// ParseWorkspaces reads a grant as a list: each item a workspace name, or
// `*` alone for every workspace. An empty list is none.
func ParseWorkspaces(list []string) (Workspaces, error) {
	if len(list) > MaxGrantedWorkspaces {
		return Workspaces{}, fmt.Errorf("%d workspaces are named; a grant names at most %d (or %q for all)", len(list), MaxGrantedWorkspaces, EveryWorkspace)
	}
	var w Workspaces
	for _, ws := range list {
		if ws == EveryWorkspace {
			if len(list) > 1 {
				return Workspaces{}, fmt.Errorf("%q stands for every workspace and comes alone, not with %d others", EveryWorkspace, len(list)-1)
			}
			return AllWorkspaces(), nil
		}
		if err := names.CheckWorkspace(ws); err != nil {
			return Workspaces{}, err
		}
		w.names = append(w.names, ws)
	}
	slices.Sort(w.names)
	w.names = slices.Compact(w.names)
	return w, nil
}

// ParseWorkspaceList reads a grant written as String writes it: `*`, or
// workspace names joined by commas; the empty string is none.
func ParseWorkspaceList(s string) (Workspaces, error) {
	if s == "" {
		return Workspaces{}, nil
	}
	return ParseWorkspaces(strings.Split(s, ","))
}

// Sees reports whether ws is among the workspaces.
func (w Workspaces) Sees(ws string) bool {
	if w.all {
		return true
	}
	_, ok := slices.BinarySearch(w.names, ws)
	return ok
}

// All reports whether the workspaces are every workspace.
func (w Workspaces) All() bool { return w.all }

// Empty reports whether no workspace is seen.
func (w Workspaces) Empty() bool { return !w.all && len(w.names) == 0 }

// List is the grant as a list: [`*`] for every workspace, else the names,
// sorted. The caller may keep it.
func (w Workspaces) List() []string {
	if w.all {
		return []string{EveryWorkspace}
	}
	return slices.Clone(w.names)
}

// String is the grant as ParseWorkspaceList reads it.
func (w Workspaces) String() string { return strings.Join(w.List(), ",") }

// Granted looks up the grant record of an identity: ok is false when it has
// none.
type Granted func(name string) (w Workspaces, ok bool)

// Resolve is the rule of docs/design.md §4, what id may see: what its
// credential states (a token's workspaces, every workspace in dev mode);
// else by grade — admin and service every workspace, a driver its grant
// record (none: nothing), a host nothing (it advertises, follows and
// completes only its own).
func (id Identity) Resolve(granted Granted) Workspaces {
	if id.Workspaces != nil {
		return *id.Workspaces
	}
	switch id.Grade {
	case Admin, Service:
		return AllWorkspaces()
	case Driver:
		if granted != nil {
			if w, ok := granted(id.Name); ok {
				return w
			}
		}
	}
	return Workspaces{}
}
