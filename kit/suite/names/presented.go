// The presented name of a client's tool, the name a model sees
// (docs/design.md §1): `<client>_<tool>`, 1–64 chars of [A-Za-z0-9_-].
// The mapping is a pure function of (client, tool): it depends on nothing
// else the registry holds, so a name never changes when another client
// joins, and it is the same after a restart. Client names hold no `_`, so
// every presented name splits at its first `_` and names of different
// clients never collide.
package names

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// MaxPresented bounds a presented name: the longest name model APIs accept for a
// tool.
const MaxPresented = 64

// hashDigits is how many hex digits of the pair's hash end a cut name; cut
// leaves room for them and the `_` before them.
const (
	hashDigits = 8
	cut        = MaxPresented - 1 - hashDigits
)

// Presented is the presented name of tool as client advertises it. A tool name
// of [A-Za-z0-9_-] that fits is kept as it is; any other is sanitised (each
// rune outside that set becomes `_`), cut, and suffixed with a hash of the
// exact pair, so two names that sanitise alike still differ.
func Presented(client, tool string) string {
	if len(client)+1+len(tool) <= MaxPresented && plain(tool) {
		return client + "_" + tool
	}
	var b strings.Builder
	b.Grow(MaxPresented)
	b.WriteString(client)
	b.WriteByte('_')
	for _, r := range tool {
		if b.Len() >= cut {
			break
		}
		if allowed(r) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	name := b.String()
	if len(name) > cut {
		name = name[:cut] // every byte after the client is ASCII, so this cuts no rune
	}
	sum := sha256.Sum256([]byte(client + "\x00" + tool))
	return name + "_" + hex.EncodeToString(sum[:])[:hashDigits]
}

// ValidPresented reports whether name has the shape of a presented name.
func ValidPresented(name string) bool {
	return name != "" && len(name) <= MaxPresented && plain(name)
}

// plain reports whether s is all [A-Za-z0-9_-].
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if !allowed(rune(s[i])) {
			return false
		}
	}
	return true
}

func allowed(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-'
}
