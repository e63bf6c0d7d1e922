// Package names checks the names the suite's vocabulary is built from
// (docs/design.md §1): clients and workspaces.
package names

import (
	"fmt"
	"regexp"
)

var (
	clientRE    = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)
	workspaceRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)
)

// CheckClient refuses a name that cannot be a client. Client names hold no
// `_`, so a presented name `<client>_<tool>` splits at its first `_`.
func CheckClient(name string) error {
	if !clientRE.MatchString(name) {
		return fmt.Errorf("client name %q is not 1–32 chars of [a-z0-9-] starting with a letter or digit", name)
	}
	return nil
}

// CheckWorkspace refuses a name that cannot be a workspace.
func CheckWorkspace(name string) error {
	if !workspaceRE.MatchString(name) {
		return fmt.Errorf("workspace name %q is not 1–64 chars of [a-z0-9-] starting with a letter or digit", name)
	}
	return nil
}
