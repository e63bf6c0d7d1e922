// Package pins holds the rules of tool pins (docs/security.md, "Tool
// pins"): a tool's fingerprint, which of its fields changed, and how an
// advertised tool stands against its pin under a workspace's policy.
package pins

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
)

// field is one part of a tool the fingerprint covers: what a model reads.
type field struct {
	name string // as Pin.changed names it
	json string // the key in the fingerprinted object
	of   func(*registryv1.Tool) (string, bool)
	text bool // JSON text to canonicalise, else a plain string
}

var fields = []field{
	{"name", "name", func(t *registryv1.Tool) (string, bool) { return t.GetName(), true }, false},
	{"title", "title", func(t *registryv1.Tool) (string, bool) { return t.GetTitle(), t.Title != nil }, false},
	{"description", "description", func(t *registryv1.Tool) (string, bool) { return t.GetDescription(), true }, false},
	{"input_schema", "inputSchema", func(t *registryv1.Tool) (string, bool) { return t.GetInputSchema(), true }, true},
	{"output_schema", "outputSchema", func(t *registryv1.Tool) (string, bool) { return t.GetOutputSchema(), t.OutputSchema != nil }, true},
	{"annotations", "annotations", func(t *registryv1.Tool) (string, bool) { return t.GetAnnotations(), t.Annotations != nil }, true},
}

// canonical is a field's value as a JSON value: JSON text decoded and
// encoded again with sorted keys and numbers kept as written, so a key
// order or whitespace change is not a change. Text that does not decode
// (the registry refuses such sets) is kept as a string.
func canonical(f field, t *registryv1.Tool) (json.RawMessage, bool) {
	v, ok := f.of(t)
	if !ok {
		return nil, false
	}
	if f.text {
		d := json.NewDecoder(strings.NewReader(v))
		d.UseNumber()
		var parsed any
		if err := d.Decode(&parsed); err == nil {
			if b, err := json.Marshal(parsed); err == nil {
				return b, true
			}
		}
	}
	b, _ := json.Marshal(v)
	return b, true
}

// Fingerprint is the SHA-256 (hex) of t's canonical form: one JSON object
// of the fields a model reads, keys sorted.
func Fingerprint(t *registryv1.Tool) string {
	var buf bytes.Buffer
	buf.WriteByte('{')
	// Sorted by JSON key: annotations, description, inputSchema, name,
	// outputSchema, title.
	for i, key := range []int{5, 2, 3, 0, 4, 1} {
		f := fields[key]
		v, ok := canonical(f, t)
		if !ok {
			continue
		}
		if i > 0 && buf.Len() > 1 {
			buf.WriteByte(',')
		}
		buf.WriteString(strconv.Quote(f.json))
		buf.WriteByte(':')
		buf.Write(v)
	}
	buf.WriteByte('}')
	h := sha256.Sum256(buf.Bytes())
	return hex.EncodeToString(h[:])
}

// Changed names the fields in which b differs from a, in a fixed order.
func Changed(a, b *registryv1.Tool) []string {
	var out []string
	for _, f := range fields {
		va, oka := canonical(f, a)
		vb, okb := canonical(f, b)
		if oka != okb || !bytes.Equal(va, vb) {
			out = append(out, f.name)
		}
	}
	return out
}

// PolicyOf reads an unset policy as hold, every workspace's default.
func PolicyOf(p registryv1.PinPolicy) registryv1.PinPolicy {
	if p == registryv1.PinPolicy_PIN_POLICY_UNSPECIFIED {
		return registryv1.PinPolicy_PIN_POLICY_HOLD
	}
	return p
}

// State is how a tool advertised with fingerprint fp stands against pin
// under policy.
func State(pin *registryv1.Pin, fp string, policy registryv1.PinPolicy) registryv1.PinState {
	policy = PolicyOf(policy)
	switch {
	case pin.GetFingerprint() == fp || policy == registryv1.PinPolicy_PIN_POLICY_OFF:
		return registryv1.PinState_PIN_STATE_PINNED
	case pin.Rejected != nil && pin.GetRejected() == fp:
		return registryv1.PinState_PIN_STATE_REJECTED
	case policy == registryv1.PinPolicy_PIN_POLICY_WARN:
		return registryv1.PinState_PIN_STATE_CHANGED
	default:
		return registryv1.PinState_PIN_STATE_HELD
	}
}

// Served reports whether a tool in state s is listed and callable.
func Served(s registryv1.PinState) bool {
	return s != registryv1.PinState_PIN_STATE_HELD && s != registryv1.PinState_PIN_STATE_REJECTED
}

// Refusal is the sentence that refuses a call to a tool p holds.
func Refusal(p *registryv1.Pin) string {
	what := strings.Join(p.GetChanged(), ", ")
	if what == "" {
		what = "its definition"
	}
	if p.GetState() == registryv1.PinState_PIN_STATE_REJECTED {
		return fmt.Sprintf("tool %q is not served in workspace %q: its %s changed since it was pinned, and an admin rejected that change; it is served again when %q advertises the pinned definition", p.GetPresentedName(), p.GetWorkspace(), what, p.GetClient())
	}
	return fmt.Sprintf("tool %q is held in workspace %q: its %s changed since it was pinned; an admin reviews the change (switchboard pins show %s %s) and approves or rejects it", p.GetPresentedName(), p.GetWorkspace(), what, p.GetWorkspace(), p.GetPresentedName())
}

// PolicyName is a policy as the CLI and REST spell it: off, warn or hold.
func PolicyName(p registryv1.PinPolicy) string {
	return strings.ToLower(strings.TrimPrefix(PolicyOf(p).String(), "PIN_POLICY_"))
}

// ParsePolicy reads off, warn or hold.
func ParsePolicy(s string) (registryv1.PinPolicy, error) {
	v, ok := registryv1.PinPolicy_value["PIN_POLICY_"+strings.ToUpper(s)]
	if !ok || v == 0 {
		return 0, fmt.Errorf("pin policy %q is none of off, warn and hold", s)
	}
	return registryv1.PinPolicy(v), nil
}

// Field is the field of t that Pin.changed names, as text ("" when unset).
func Field(t *registryv1.Tool, name string) string {
	for _, f := range fields {
		if f.name == name {
			v, _ := f.of(t)
			return v
		}
	}
	return ""
}

// StateName is a pin state as people read it: pinned, changed, held or
// rejected.
func StateName(s registryv1.PinState) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "PIN_STATE_"))
}
