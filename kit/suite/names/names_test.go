package names

import (
	"regexp"
	"strings"
	"testing"
)

// The expressions the byte checks replaced: they stay the definition.
var (
	clientRE    = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)
	workspaceRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)
)

var nameCases = []string{
	"", "a", "0", "-", "-a", "a-", "default", "my-team-2", "A", "aB", "a_b", "a b", "a.b",
	"a\n", "\na", "a\x00", "é", "aé", "a/b", "a:b", "{", "`", "@", "[", "/", ":",
	strings.Repeat("a", 31), strings.Repeat("a", 32), strings.Repeat("a", 33),
	strings.Repeat("a", 63), strings.Repeat("a", 64), strings.Repeat("a", 65),
	"-" + strings.Repeat("a", 31), strings.Repeat("é", 16), strings.Repeat("é", 32),
}

// checkAgainstExpressions fails when a byte check and its expression disagree on name.
func checkAgainstExpressions(t *testing.T, name string) {
	t.Helper()
	if got, want := CheckClient(name) == nil, clientRE.MatchString(name); got != want {
		t.Errorf("CheckClient(%q) accepts=%v, the expression says %v", name, got, want)
	}
	if got, want := CheckWorkspace(name) == nil, workspaceRE.MatchString(name); got != want {
		t.Errorf("CheckWorkspace(%q) accepts=%v, the expression says %v", name, got, want)
	}
}

func TestTheChecksGiveTheExpressionsVerdicts(t *testing.T) {
	t.Parallel()
	for _, name := range nameCases {
		checkAgainstExpressions(t, name)
	}
	// Every single byte, alone, leading and trailing a valid name.
	for b := 0; b < 256; b++ {
		c := string([]byte{byte(b)})
		checkAgainstExpressions(t, c)
		checkAgainstExpressions(t, c+"a")
		checkAgainstExpressions(t, "a"+c)
	}
}

func TestARefusalNamesTheBadName(t *testing.T) {
	t.Parallel()
	if err := CheckWorkspace("Bad_Name"); err == nil || !strings.Contains(err.Error(), `"Bad_Name"`) {
		t.Fatalf("CheckWorkspace(%q) = %v, want a refusal naming it", "Bad_Name", err)
	}
	if err := CheckClient("-x"); err == nil || !strings.Contains(err.Error(), `"-x"`) {
		t.Fatalf("CheckClient(%q) = %v, want a refusal naming it", "-x", err)
	}
}

func FuzzTheChecksGiveTheExpressionsVerdicts(f *testing.F) {
	for _, name := range nameCases {
		f.Add(name)
	}
	f.Fuzz(checkAgainstExpressions)
}

func BenchmarkCheckWorkspace(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := CheckWorkspace("default"); err != nil {
			b.Fatal(err)
		}
	}
}
