package plugin

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/switchboard-run/switchboard/kit/suite/capture"
)

// The bridge's side of the JSON-lines wire (docs/design.md §7): one JSON object per
// line, each with a "type".

type initMsg struct {
	Type    string `json:"type"`
	Restart int    `json:"restart"`
	Client  string `json:"client"`
}

type requestMsg struct {
	Type   string     `json:"type"`
	ID     int64      `json:"id"`
	Method string     `json:"method"`
	Params toolParams `json:"params"`
	// Traceparent is the run's W3C trace context; absent when untraced.
	Traceparent string `json:"traceparent,omitempty"`
}

type toolParams struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

type cancelMsg struct {
	Type string `json:"type"`
	ID   int64  `json:"id"`
}

type shutdownMsg struct {
	Type string `json:"type"`
}

// encode renders msg as its line. Raw JSON inside (a call's arguments) is
// made compact, so a pretty-printed input cannot break the framing; HTML
// characters are left as they are.
func encode(msg any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(msg); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// message is one line from the backend, its fields kept raw until its type
// says what they are.
type message struct {
	typ    string
	fields map[string]json.RawMessage
	line   []byte // compact, for surfacing in status
}

var (
	errNotObject = errors.New("is not a JSON object")
	errNoType    = errors.New(`has no string "type"`)
)

// decode reads one line. Surrounding whitespace (a "\r" before the newline)
// is allowed.
func decode(line []byte) (message, error) {
	var m message
	if err := json.Unmarshal(line, &m.fields); err != nil || m.fields == nil {
		return m, errNotObject
	}
	if json.Unmarshal(m.fields["type"], &m.typ) != nil {
		return m, errNoType
	}
	var b bytes.Buffer
	_ = json.Compact(&b, line) // valid: it just decoded
	m.line = b.Bytes()
	return m, nil
}

// carries reports whether the message has key, even as null.
func (m message) carries(key string) bool {
	_, ok := m.fields[key]
	return ok
}

// has reports whether the message carries key with a value other than
// null.
func (m message) has(key string) bool {
	raw, ok := m.fields[key]
	return ok && !bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

// text is a field as text: a string's value, any other value's compact
// JSON, or "" when absent.
func (m message) text(key string) string {
	raw, ok := m.fields[key]
	if !ok {
		return ""
	}
	return valueText(raw)
}

// valueText is a JSON value as text: a string is the text itself, any
// other value its compact JSON, as valid UTF-8.
func valueText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return capture.Text(raw)
	}
	return capture.Text(b.Bytes())
}

// id is the message's "id" when it is a whole number.
func (m message) id() (int64, bool) {
	raw, ok := m.fields["id"]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, 64)
	return n, err == nil
}
