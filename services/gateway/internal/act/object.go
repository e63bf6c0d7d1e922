package act

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/switchboard-run/switchboard/kit/lib/rawjson"
	"github.com/switchboard-run/switchboard/services/gateway/internal/httperr"
)

// member is one key of a JSON object with its value's exact bytes.
type member struct {
	key string
	raw json.RawMessage
}

// refuse is a decoding refusal: 400 with the sentence.
func refuse(format string, args ...any) *httperr.Error {
	return httperr.New(http.StatusBadRequest, format, args...)
}

// quote quotes a name from the request for a sentence, cut so that a
// megabyte-long key cannot make a megabyte-long error.
func quote(s string) string {
	const most = 64
	if len(s) <= most {
		return strconv.Quote(s)
	}
	cut := most
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut] + "…")
}

// members reads raw, a JSON object already known to be valid, into its
// members in document order, refusing a duplicate key. where prefixes the
// sentence ("tools[2]: ").
func members(raw []byte, where string) ([]member, error) {
	var buf [8]rawjson.Member
	found, ok := rawjson.Members(buf[:0], raw)
	if !ok {
		return nil, refuse("%snot a JSON object", where)
	}
	ms := make([]member, 0, len(found))
	seen := make(map[string]bool, len(found))
	for _, m := range found {
		if seen[m.Key] {
			return nil, refuse("%sduplicate field %s", where, quote(m.Key))
		}
		seen[m.Key] = true
		ms = append(ms, member{key: m.Key, raw: m.Value})
	}
	return ms, nil
}

// elements reads raw, a JSON array already known to be valid, into its
// elements' exact bytes.
func elements(raw []byte) ([]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // '['
		return nil, err
	}
	var out []json.RawMessage
	for dec.More() {
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// kind is the JSON type a field must have.
type kind int

const (
	kindString kind = iota
	kindBool
	kindObject
	kindArray
	kindNumber
	kindAny
)

// noun names a kind in a sentence: `field "x" is not <noun>`.
func (k kind) noun() string {
	switch k {
	case kindString:
		return "a string"
	case kindBool:
		return "a boolean"
	case kindObject:
		return "a JSON object"
	case kindArray:
		return "an array"
	case kindNumber:
		return "an integer"
	}
	return "a JSON value"
}

// is reports whether raw (valid JSON) has kind k.
func (k kind) is(raw []byte) bool {
	c := raw[0]
	switch k {
	case kindString:
		return c == '"'
	case kindBool:
		return c == 't' || c == 'f'
	case kindObject:
		return c == '{'
	case kindArray:
		return c == '['
	case kindNumber:
		return c == '-' || (c >= '0' && c <= '9')
	}
	return true
}

// field is one field a shape allows.
type field struct {
	name     string
	kind     kind
	required bool
}

// fields checks ms against the shape: no unknown field, each field of its
// kind, every required field present. A null optional field counts as
// absent (a null cwd is the ordinary no-cwd case); a null required field is
// mistyped, except where any JSON value is allowed (input). It returns the
// present values by name.
func fields(ms []member, where string, shape []field) (map[string]json.RawMessage, error) {
	got := make(map[string]json.RawMessage, len(ms))
	for _, m := range ms {
		f, ok := lookup(shape, m.key)
		if !ok {
			return nil, refuse("%sunknown field %s", where, quote(m.key))
		}
		if string(m.raw) == "null" && !f.required {
			continue
		}
		if !f.kind.is(m.raw) {
			return nil, refuse("%sfield %s is not %s", where, quote(f.name), f.kind.noun())
		}
		got[m.key] = m.raw
	}
	for _, f := range shape {
		if _, ok := got[f.name]; f.required && !ok {
			return nil, refuse("%smissing field %s", where, quote(f.name))
		}
	}
	return got, nil
}

func lookup(shape []field, name string) (field, bool) {
	for _, f := range shape {
		if f.name == name {
			return f, true
		}
	}
	return field{}, false
}

// str decodes a JSON string already known to be one.
func str(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s) // valid UTF-8 body, checked kind: cannot fail
	return s
}

// optStr is str for an optional field: nil when absent.
func optStr(got map[string]json.RawMessage, name string) *string {
	raw, ok := got[name]
	if !ok {
		return nil
	}
	s := str(raw)
	return &s
}
