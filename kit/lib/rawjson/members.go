package rawjson

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// Member is one member of a JSON object: its key, unescaped, and the exact
// bytes of its value.
type Member struct {
	Key   string
	Value json.RawMessage
}

// Members appends the members of obj, a JSON object, to dst in document
// order, and reports whether obj was one. obj must already be known to be
// valid JSON (json.Valid, or a value cut from such a document): it is read
// in one pass with no decoder, because encoding/json's Decoder, read token
// by token, allocates a syntax error at the end of every value it returns,
// and on the MCP endpoint's hot path that was more than the rest of the
// request's handling (docs/bench.md). Duplicate keys are all returned; what
// they mean is the caller's to say. Each Value shares obj's bytes.
func Members(dst []Member, obj []byte) ([]Member, bool) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return dst, false
	}
	i = skipSpace(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return dst, skipSpace(obj, i+1) == len(obj)
	}
	for i < len(obj) {
		keyEnd := skipValue(obj, i)
		if obj[i] != '"' || keyEnd < 0 {
			return dst, false
		}
		key, ok := unquote(obj[i:keyEnd])
		if i = skipSpace(obj, keyEnd); !ok || i >= len(obj) || obj[i] != ':' {
			return dst, false
		}
		start := skipSpace(obj, i+1)
		end := skipValue(obj, start)
		if end < 0 {
			return dst, false
		}
		dst = append(dst, Member{Key: key, Value: obj[start:end:end]})
		if i = skipSpace(obj, end); i >= len(obj) {
			return dst, false
		}
		switch obj[i] {
		case ',':
			i = skipSpace(obj, i+1)
		case '}':
			return dst, skipSpace(obj, i+1) == len(obj)
		default:
			return dst, false
		}
	}
	return dst, false
}

// Elements appends the elements of arr, a JSON array, to dst in order, and
// reports whether arr was one. As with Members, arr must be valid JSON and
// each element shares its bytes.
func Elements(dst []json.RawMessage, arr []byte) ([]json.RawMessage, bool) {
	i := skipSpace(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return dst, false
	}
	if i = skipSpace(arr, i+1); i < len(arr) && arr[i] == ']' {
		return dst, skipSpace(arr, i+1) == len(arr)
	}
	for i < len(arr) {
		end := skipValue(arr, i)
		if end < 0 {
			return dst, false
		}
		dst = append(dst, arr[i:end:end])
		if i = skipSpace(arr, end); i >= len(arr) {
			return dst, false
		}
		switch arr[i] {
		case ',':
			i = skipSpace(arr, i+1)
		case ']':
			return dst, skipSpace(arr, i+1) == len(arr)
		default:
			return dst, false
		}
	}
	return dst, false
}

// unquote is a key's text: the bytes between the quotes when they hold no
// escape and are valid UTF-8 (nearly always), else what encoding/json makes
// of them (it decodes escapes and turns invalid UTF-8 into U+FFFD).
func unquote(quoted []byte) (string, bool) {
	if bytes.IndexByte(quoted, '\\') < 0 && utf8.Valid(quoted) {
		return string(quoted[1 : len(quoted)-1]), true
	}
	var s string
	return s, json.Unmarshal(quoted, &s) == nil
}

// skipSpace is the index of the first byte at or after i that is not JSON
// white space.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue is the index just past the valid JSON value that starts at i,
// or -1 when b ends first.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		for i++; i < len(b); i++ {
			switch b[i] {
			case '\\':
				i++ // the escaped byte, whatever it is, does not close the string
			case '"':
				return i + 1
			}
		}
		return -1
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				if i = skipValue(b, i); i < 0 {
					return -1
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	}
	// A number or a literal runs to the next delimiter.
	start := i
	for i < len(b) && !delimiter(b[i]) {
		i++
	}
	if i == start {
		return -1
	}
	return i
}

// delimiter reports whether c ends a number or a literal.
func delimiter(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\t', '\r', '\n':
		return true
	}
	return false
}
