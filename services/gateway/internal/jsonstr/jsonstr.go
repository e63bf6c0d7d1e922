// Package jsonstr writes JSON string literals exactly, for the gateway's
// hand-built replies: the act shapes are bytes, so the gateway writes them
// itself instead of asking a marshaler that might reorder, re-escape or
// re-encode them.
package jsonstr

import (
	"unicode/utf8"
)

const hex = "0123456789abcdef"

// Append appends s to b as a JSON string literal. Quotes, backslashes and
// control characters are escaped, as are U+2028 and U+2029 (JavaScript reads
// them as line ends); invalid UTF-8 becomes U+FFFD, as in encoding/json.
// HTML characters are left alone: the replies are JSON, never HTML.
func Append(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
