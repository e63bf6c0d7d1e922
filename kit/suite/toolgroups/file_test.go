package toolgroups

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "groups.json")
	body := `{"groups": [
	 {"workspace": "default", "name": "readonly", "patterns": ["*_get*", "!*_delete*"],
	  "overrides": [{"tool": "gh_get_issue", "alias": "issue", "description": "Read one issue."}]},
	 {"workspace": "ops", "name": "all", "patterns": ["*"]}]}`
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	groups, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 2 || groups[0].GetOverrides()[0].GetAlias() != "issue" || groups[1].GetWorkspace() != "ops" {
		t.Fatalf("LoadFile = %v", groups)
	}
}

func TestParseRefusesNamingTheValue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ body, want string }{
		{`{"groups": [{"workspace": "w", "name": "g", "patterns": ["a["]}]}`, `group 1: pattern "a[" of group "g" is not a glob`},
		{`{"groups": [{"workspace": "w", "name": "g", "patterns": ["*"], "colour": "red"}]}`, `group 1:`},
		{`{"grops": []}`, `unknown field "grops"`},
		{`{"groups": [{"workspace": "w", "name": "g", "patterns": ["*"]}, {"workspace": "w", "name": "g", "patterns": ["a*"]}]}`, `group "g" of workspace "w" is defined twice`},
	} {
		_, err := Parse([]byte(tc.body))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%s) = %v, want an error containing %q", tc.body, err, tc.want)
		}
	}
}
