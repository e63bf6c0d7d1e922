package identity_test

import (
	"strings"
	"testing"

	"github.com/switchboard-run/switchboard/kit/suite/identity"
)

func TestWorkspacesParseAndSee(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want, err string
		sees, hides   string
	}{
		{in: "", want: "", hides: "dev"},
		{in: "*", want: "*", sees: "anything"},
		{in: "ops,dev,ops", want: "dev,ops", sees: "ops", hides: "prod"},
		{in: "dev,*", err: `"*" stands for every workspace and comes alone, not with 1 others`},
		{in: "dev,", err: `workspace name "" is not 1–64 chars of [a-z0-9-] starting with a letter or digit`},
		{in: "Dev", err: `workspace name "Dev" is not 1–64 chars of [a-z0-9-] starting with a letter or digit`},
		{in: strings.Repeat("w,", identity.MaxGrantedWorkspaces) + "w", err: "257 workspaces are named; a grant names at most 256 (or \"*\" for all)"},
	} {
		w, err := identity.ParseWorkspaceList(tc.in)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("ParseWorkspaceList(%q) = %v, %v; want the error %q", tc.in, w, err, tc.err)
			}
			continue
		}
		if err != nil || w.String() != tc.want {
			t.Errorf("ParseWorkspaceList(%q) = %q, %v; want %q", tc.in, w.String(), err, tc.want)
		}
		if tc.sees != "" && !w.Sees(tc.sees) {
			t.Errorf("%q does not see %q", tc.in, tc.sees)
		}
		if tc.hides != "" && w.Sees(tc.hides) {
			t.Errorf("%q sees %q", tc.in, tc.hides)
		}
	}
}

func TestResolveIsTheGrantRule(t *testing.T) {
	t.Parallel()
	dev, _ := identity.ParseWorkspaceList("dev")
	records := func(name string) (identity.Workspaces, bool) {
		if name == "granted" {
			return dev, true
		}
		return identity.Workspaces{}, false
	}
	for _, tc := range []struct {
		id   identity.Identity
		want string
	}{
		{identity.Identity{Name: "root", Grade: identity.Admin}, "*"},
		{identity.Identity{Name: "mailbox", Grade: identity.Service}, "*"},
		{identity.Identity{Name: "granted", Grade: identity.Driver}, "dev"},
		{identity.Identity{Name: "nobody", Grade: identity.Driver}, ""},
		{identity.Identity{Name: "granted", Grade: identity.Host}, ""},
		{identity.Identity{Name: "root", Grade: identity.Admin, Workspaces: &dev}, "dev"},
	} {
		if got := tc.id.Resolve(records).String(); got != tc.want {
			t.Errorf("%v sees %q, want %q", tc.id, got, tc.want)
		}
	}
}

// FuzzParseWorkspaceList: the metadata decoder never panics, and what it
// accepts it writes back in a form it reads as the same grant.
func FuzzParseWorkspaceList(f *testing.F) {
	for _, s := range []string{"", "*", "dev", "dev,ops", "ops,dev,dev", "*,dev", ",", "a,,b", "Dev", "\xff", strings.Repeat("a,", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		w, err := identity.ParseWorkspaceList(s)
		if err != nil {
			return
		}
		again, err := identity.ParseWorkspaceList(w.String())
		if err != nil || again.String() != w.String() {
			t.Fatalf("%q read as %q, which reads back as %q, %v", s, w.String(), again.String(), err)
		}
	})
}
