// Package childenv is the environment a suite process gives the programs it
// runs for others — the tool host's tools, the bridge's MCP servers and
// plugin backends (docs/security.md): never the parent's own, which
// may hold its secrets (API tokens, NATS credentials) and the paths of its
// TLS material, but an allowlist.
package childenv

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
)

// Inherited are the variables a child takes from its parent, when set: what
// a program needs to find programs, a home, a locale and a clock. It is the
// MCP SDKs' default set for stdio servers (HOME, LOGNAME, PATH, SHELL,
// TERM, USER) with the locale, the time zone and the temporary directory.
var Inherited = []string{"HOME", "LANG", "LC_ALL", "LOGNAME", "PATH", "SHELL", "TERM", "TMPDIR", "TZ", "USER"}

// Build is a child's environment, sorted by name: the Inherited variables
// lookup finds, then config (the child's own env from its configuration),
// then protocol (what the suite tells the child, such as the invocation
// id). A later source wins over an earlier one.
func Build(lookup func(string) (string, bool), config, protocol map[string]string) []string {
	env := map[string]string{}
	for _, k := range Inherited {
		if v, ok := lookup(k); ok {
			env[k] = v
		}
	}
	maps.Copy(env, config)
	maps.Copy(env, protocol)
	out := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out
}

// Environ is Build from this process's environment.
func Environ(config, protocol map[string]string) []string {
	return Build(os.LookupEnv, config, protocol)
}

// Check refuses variables exec cannot pass: a name that is empty or holds
// '=' or NUL, a value that holds NUL.
func Check(env map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(env)) {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return fmt.Errorf("environment variable name %q is not usable: it is empty or holds '=' or NUL", k)
		}
		if strings.ContainsRune(env[k], 0) {
			return fmt.Errorf("environment variable %q holds a NUL byte", k)
		}
	}
	return nil
}
