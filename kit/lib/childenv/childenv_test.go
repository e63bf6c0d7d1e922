package childenv

import (
	"slices"
	"testing"
)

func TestBuildTakesTheAllowlistThenTheConfigThenTheProtocol(t *testing.T) {
	t.Parallel()
	parent := map[string]string{"PATH": "/bin", "HOME": "/root", "SWITCHBOARD_TLS_KEY": "/certs/key.pem", "AWS_SECRET_ACCESS_KEY": "x"}
	lookup := func(k string) (string, bool) { v, ok := parent[k]; return v, ok }
	got := Build(lookup, map[string]string{"HOME": "/srv", "API_KEY": "k", "SWITCHBOARD_INVOCATION": "spoofed"},
		map[string]string{"SWITCHBOARD_INVOCATION": "inv-1"})
	want := []string{"API_KEY=k", "HOME=/srv", "PATH=/bin", "SWITCHBOARD_INVOCATION=inv-1"}
	if !slices.Equal(got, want) {
		t.Fatalf("Build = %q\nwant %q", got, want)
	}
}

func TestCheckRefusesWhatExecCannotPass(t *testing.T) {
	t.Parallel()
	for env, want := range map[string]string{
		"":    `environment variable name "" is not usable: it is empty or holds '=' or NUL`,
		"A=B": `environment variable name "A=B" is not usable: it is empty or holds '=' or NUL`,
	} {
		if err := Check(map[string]string{env: "v"}); err == nil || err.Error() != want {
			t.Errorf("Check(%q) = %v, want %q", env, err, want)
		}
	}
	if err := Check(map[string]string{"A": "a\x00b"}); err == nil || err.Error() != `environment variable "A" holds a NUL byte` {
		t.Errorf("a NUL in a value: %v", err)
	}
	if err := Check(map[string]string{"A": "a", "B": ""}); err != nil {
		t.Errorf("a good env: %v", err)
	}
}
