package records

import (
	"regexp"
	"strings"
	"testing"
)

// keyToken is what NATS takes as one token of a key.
var keyToken = regexp.MustCompile(`^[-_=/.A-Za-z0-9]+$`)

func TestGrantKeysRoundTrip(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"alice", "CN with spaces", "ünïcode ✓", "a.b/c=d", strings.Repeat("x", 128)} {
		key := GrantKey(name)
		if !keyToken.MatchString(key) || strings.Contains(key, ".") {
			t.Errorf("GrantKey(%q) = %q, not one key token", name, key)
		}
		if back, err := ParseGrantKey(key); err != nil || back != name {
			t.Errorf("ParseGrantKey(GrantKey(%q)) = %q, %v", name, back, err)
		}
	}
	for key, want := range map[string]string{
		"YWxpY2U=":  `grant key "YWxpY2U=" is not unpadded URL-safe base64: illegal base64 data at input byte 7`,
		"IGFsaWNl":  `grant key "IGFsaWNl": identity " alice" has leading or trailing spaces`,
		"":          `grant key "": identity is empty`,
		"YWxp\rY2U": `grant key "YWxp\rY2U" is not unpadded URL-safe base64: it holds characters outside the alphabet`,
	} {
		if _, err := ParseGrantKey(key); err == nil || err.Error() != want {
			t.Errorf("ParseGrantKey(%q) = %v, want %q", key, err, want)
		}
	}
}

// FuzzGrantKey: every identity name encodes to one key token that decodes
// back to it, and the decoder never panics and accepts only keys of names.
func FuzzGrantKey(f *testing.F) {
	for _, s := range []string{"alice", "a b", "\x00", "ü", "YWxpY2U", "YWxp\nY2U", "a.b", strings.Repeat("z", 200)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if name, err := ParseGrantKey(s); err == nil {
			if GrantKey(name) != s {
				t.Fatalf("ParseGrantKey(%q) = %q, which encodes to %q", s, name, GrantKey(name))
			}
		}
		key := GrantKey(s)
		if s != "" && (!keyToken.MatchString(key) || strings.Contains(key, ".")) {
			t.Fatalf("GrantKey(%q) = %q, not one key token", s, key)
		}
		back, err := ParseGrantKey(key)
		if err == nil && back != s {
			t.Fatalf("GrantKey(%q) decodes to %q", s, back)
		}
	})
}
