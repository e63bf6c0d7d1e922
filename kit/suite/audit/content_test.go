package audit_test

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/switchboard-run/switchboard/kit/suite/audit"
)

// Content keeps what fits whole, cuts the rest at a character's edge, and
// names each field it cut.
func TestContentCutsLongFieldsAtACharactersEdge(t *testing.T) {
	t.Parallel()
	cwd := "/srv"
	odd := "x" + strings.Repeat("€", audit.MaxContentBytes/3+1) // 3-byte runes, one byte off the bound
	c := audit.Content(`{"q":1}`, &cwd, odd, "ok", "")
	if c.GetInput() != `{"q":1}` || c.GetCwd() != "/srv" || c.GetStderr() != "ok" || c.GetMcpResult() != "" {
		t.Fatalf("whole fields changed: %v", c)
	}
	if !slices.Equal(c.GetTruncated(), []string{"stdout"}) {
		t.Fatalf("truncated names %v, want [stdout]", c.GetTruncated())
	}
	out := c.GetStdout()
	if len(out) > audit.MaxContentBytes || len(out) < audit.MaxContentBytes-3 || !utf8.ValidString(out) || !strings.HasPrefix(odd, out) {
		t.Fatalf("stdout cut to %d bytes (valid UTF-8: %v), want a prefix within %d", len(out), utf8.ValidString(out), audit.MaxContentBytes)
	}
	if c := audit.Content(strings.Repeat("a", audit.MaxContentBytes), nil, "", "", ""); len(c.GetTruncated()) != 0 || c.Cwd != nil {
		t.Fatalf("a field of exactly the bound was cut: %v", c.GetTruncated())
	}
}
