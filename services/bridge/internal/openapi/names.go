package openapi

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// maxName bounds a tool's name: a presented name is at most 64 characters
// of [A-Za-z0-9_-], so a longer tool name would be cut there anyway.
const maxName = 64

// toolName is an operation's tool name: its operationId, else its method
// and path ("get_pets_petId"), as characters of [A-Za-z0-9_-] (the
// presented names'), each other run of characters one "_", at most
// maxName long (a longer one is cut and ends in a hash of the whole).
func toolName(op *operation) string {
	raw := op.id
	if raw == "" {
		raw = strings.ToLower(op.method) + "_" + op.path
	}
	var b strings.Builder
	under := false
	for _, r := range raw {
		ok := r == '-' || r == '_' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9')
		if !ok {
			if !under && b.Len() > 0 {
				b.WriteByte('_')
			}
			under = true
			continue
		}
		b.WriteRune(r)
		under = r == '_'
	}
	name := strings.TrimRight(b.String(), "_")
	if name == "" {
		name = strings.ToLower(op.method)
	}
	if len(name) > maxName {
		sum := sha256.Sum256([]byte(raw))
		name = name[:maxName-9] + "_" + hex.EncodeToString(sum[:4])
	}
	return name
}

// uniqueName is name, or name with "_2", "_3"… when taken: two operations
// whose names sanitise alike both stay callable, in the document's order.
func uniqueName(name string, taken map[string]bool) string {
	out := name
	for i := 2; taken[out]; i++ {
		suffix := fmt.Sprintf("_%d", i)
		out = name
		if len(out)+len(suffix) > maxName {
			out = out[:maxName-len(suffix)]
		}
		out += suffix
	}
	taken[out] = true
	return out
}
