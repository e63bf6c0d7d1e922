package identity

import (
	"fmt"
	"slices"
)

// On-behalf-of scopes (docs/design.md §4): by its certificate's CN, a
// service may assert only these identities for its callers:
//
//	gateway   host, driver, admin; states a token's workspaces
//	bridge    host (its mounted clients); states none
//
// Nobody asserts `service`. Dev mode has no scopes.

// Scope is what one service may assert on behalf of its callers.
type Scope struct {
	// Grades are the grades it may assert.
	Grades []Grade
	// Workspaces says whether it may state the caller's workspaces.
	Workspaces bool
}

// ScopeOf is the scope of the service named service (its certificate's
// CN); the zero Scope asserts nothing.
func ScopeOf(service string) Scope {
	switch service {
	case "gateway":
		return Scope{Grades: []Grade{Host, Driver, Admin}, Workspaces: true}
	case "bridge":
		return Scope{Grades: []Grade{Host}}
	}
	return Scope{}
}

// MayAssert refuses an assertion outside the scope of the service named
// service, with a sentence naming who asserted what.
func MayAssert(service string, asserted Identity) error {
	sc := ScopeOf(service)
	what := fmt.Sprintf("%q as %s", asserted.Name, asserted.Grade.Article())
	switch {
	case asserted.Grade == Service:
		return fmt.Errorf("%q asserted %s: nobody may act on behalf of a service; a service calls with its own certificate", service, what)
	case len(sc.Grades) == 0:
		return fmt.Errorf("%q asserted %s, but %q acts on behalf of nobody: its calls are its own", service, what, service)
	case !slices.Contains(sc.Grades, asserted.Grade):
		return fmt.Errorf("%q asserted %s, but %q may act only for %s", service, what, service, gradeList(sc.Grades))
	case asserted.Workspaces != nil && !sc.Workspaces:
		return fmt.Errorf("%q stated the workspaces of %q, but %q may not state anyone's workspaces", service, asserted.Name, service)
	}
	return nil
}

// gradeList spells grades as "host", "host or driver", "host, driver or admin".
func gradeList(gs []Grade) string {
	s := ""
	for i, g := range gs {
		switch {
		case i == 0:
		case i == len(gs)-1:
			s += " or "
		default:
			s += ", "
		}
		s += string(g) + "s"
	}
	return s
}
