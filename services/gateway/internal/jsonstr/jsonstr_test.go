package jsonstr

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestAppendWritesTheExpectedLiteral(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in, want string
	}{
		{"plain text is copied", "hello", `"hello"`},
		{"quotes and backslashes are escaped", `a"b\c`, `"a\"b\\c"`},
		{"common control characters use their short escapes", "a\nb\rc\td\be\ff", `"a\nb\rc\td\be\ff"`},
		{"other control characters use \\u escapes", "\x00\x1f", `"\u0000\u001f"`},
		{"HTML characters are left alone", "<a&b>", `"<a&b>"`},
		{"non-ASCII text is copied", "héllo — ✓", `"héllo — ✓"`},
		{"line and paragraph separators are escaped", "a\u2028b\u2029", `"a\u2028b\u2029"`},
		{"invalid UTF-8 becomes U+FFFD", "a\xffb", `"a\ufffdb"`},
		{"the empty string is two quotes", "", `""`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := string(Append(nil, tc.in)); got != tc.want {
				t.Fatalf("Append(%q) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}

// FuzzAppend checks the property the replies rely on: the literal is valid
// JSON and decodes to the input (with invalid UTF-8 replaced).
func FuzzAppend(f *testing.F) {
	for _, s := range []string{"", "a", "\"\\", "\x00\u2028", "\xff\xfe", "日本"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		lit := Append(nil, s)
		var back string
		if err := json.Unmarshal(lit, &back); err != nil {
			t.Fatalf("Append(%q) = %s, not valid JSON: %v", s, lit, err)
		}
		want := s
		if !utf8.ValidString(s) {
			// Each bad byte becomes one U+FFFD, as encoding/json does.
			var b strings.Builder
			for i := 0; i < len(s); {
				r, n := utf8.DecodeRuneInString(s[i:])
				b.WriteRune(r)
				i += n
			}
			want = b.String()
		}
		if back != want {
			t.Fatalf("Append(%q) decodes to %q, want %q", s, back, want)
		}
	})
}
