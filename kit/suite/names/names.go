// Package names checks the names the suite's vocabulary is built from
// (docs/design.md §1), clients and workspaces, and makes the presented
// name of a client's tool (presented.go).
package names

import "fmt"

// The longest names, in bytes: the bound of `^[a-z0-9][a-z0-9-]{0,N-1}$`.
const (
	maxClient    = 32
	maxWorkspace = 64
)

// CheckClient refuses a name that cannot be a client. Client names hold no
// `_`, so a presented name `<client>_<tool>` splits at its first `_`.
func CheckClient(name string) error {
	if !valid(name, maxClient) {
		return fmt.Errorf("client name %q is not 1–32 chars of [a-z0-9-] starting with a letter or digit", name)
	}
	return nil
}

// CheckWorkspace refuses a name that cannot be a workspace.
func CheckWorkspace(name string) error {
	if !valid(name, maxWorkspace) {
		return fmt.Errorf("workspace name %q is not 1–64 chars of [a-z0-9-] starting with a letter or digit", name)
	}
	return nil
}

// valid is `^[a-z0-9][a-z0-9-]{0,max-1}$` checked byte by byte: the workspace
// is checked on every request, where a regular expression cost a measurable
// share of the endpoint's CPU (docs/bench.md). names_test.go holds it to the
// expressions' verdicts.
func valid(name string, max int) bool {
	if len(name) == 0 || len(name) > max || name[0] == '-' {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}
