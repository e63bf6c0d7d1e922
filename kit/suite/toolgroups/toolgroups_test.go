package toolgroups

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
)

func group(patterns []string, overrides ...*registryv1.ToolOverride) *registryv1.Group {
	return &registryv1.Group{Workspace: "w", Name: "g", Patterns: patterns, Overrides: overrides}
}

func TestAdmitsIncludesAndExcludes(t *testing.T) {
	t.Parallel()
	r, err := Compile(group([]string{"*_get*", "*_list*", "!*_delete*"}))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{
		"gh_get_issue": true, "gh_list_repos": true, "gh_list_delete_me": false,
		"gh_create_issue": false, "fs_get": true,
	} {
		if got := r.Admits(name); got != want {
			t.Errorf("Admits(%q) = %v, want %v", name, got, want)
		}
	}
	only, err := Compile(group([]string{"!*_delete*"}))
	if err != nil {
		t.Fatal(err)
	}
	if !only.Admits("gh_create") || only.Admits("gh_delete") {
		t.Error("a group of excludes only should hold every tool but the excluded")
	}
}

func TestCompileRefusesNamingTheValue(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", MaxPatternLen+1)
	many := make([]string, MaxPatterns+1)
	for i := range many {
		many[i] = "x*"
	}
	alias := func(tool, a string) *registryv1.ToolOverride {
		return &registryv1.ToolOverride{Tool: tool, Alias: proto.String(a)}
	}
	for _, tc := range []struct {
		name string
		g    *registryv1.Group
		want string
	}{
		{"a bad glob", group([]string{"a[b"}), `pattern "a[b" of group "g" is not a glob`},
		{"an empty exclude", group([]string{"!"}), `pattern "!" of group "g" is empty`},
		{"a long pattern", group([]string{long}), "at most 128 are taken"},
		{"too many patterns", group(many), "has 33 patterns; a group takes 1 to 32"},
		{"no patterns", group(nil), "has 0 patterns"},
		{"a bad group name", &registryv1.Group{Name: "Bad_Name", Patterns: []string{"*"}}, `group name "Bad_Name"`},
		{"a bad alias", group([]string{"*"}, alias("a_b", "no spaces")), `alias "no spaces" of tool "a_b"`},
		{"two tools under one alias", group([]string{"*"}, alias("a_b", "x"), alias("a_c", "x")), `alias "x" of tool "a_c" in group "g" is already the alias of "a_b"`},
		{"an empty override", group([]string{"*"}, &registryv1.ToolOverride{Tool: "a_b"}), "sets neither an alias nor a description"},
		{"a long description", group([]string{"*"}, &registryv1.ToolOverride{Tool: "a_b", Description: proto.String(strings.Repeat("é", MaxDescription+1))}), "is 1001 characters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Compile(tc.g)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Compile = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func tool(client, name string) *registryv1.PresentedTool {
	return &registryv1.PresentedTool{PresentedName: client + "_" + name, Client: client,
		Tool: &registryv1.Tool{Name: name, Description: "about " + name, InputSchema: "{}"}}
}

func TestPresentAliasesAndDescriptions(t *testing.T) {
	t.Parallel()
	r, err := Compile(group([]string{"*_get*", "fix"},
		&registryv1.ToolOverride{Tool: "a_get", Alias: proto.String("fetch"), Description: proto.String("Fetch a thing.")},
		&registryv1.ToolOverride{Tool: "a_get_more", Description: proto.String("Better words.")},
	))
	if err != nil {
		t.Fatal(err)
	}
	list := []*registryv1.PresentedTool{tool("a", "get"), tool("a", "get_more"), tool("a", "put")}
	got := r.Present(list)
	if len(got) != 2 {
		t.Fatalf("Present = %v, want two tools", got)
	}
	if got[0].GetPresentedName() != "fetch" || got[0].GetTool().GetName() != "get" || got[0].GetClient() != "a" ||
		got[0].GetTool().GetDescription() != "Fetch a thing." {
		t.Errorf("the aliased tool is %v", got[0])
	}
	if got[1].GetPresentedName() != "a_get_more" || got[1].GetTool().GetDescription() != "Better words." {
		t.Errorf("the re-described tool is %v", got[1])
	}
	if list[0].GetTool().GetDescription() != "about get" {
		t.Error("Present changed the listing it was given")
	}
	for name, want := range map[string]string{"fetch": "a_get", "a_get_more": "a_get_more", "a_get": "", "a_put": ""} {
		res, ok := r.Resolve(name)
		if (want == "") == ok || res != want && ok {
			t.Errorf("Resolve(%q) = %q, %v; want %q", name, res, ok, want)
		}
	}
}

func TestAnAliasKeepsItsMeaning(t *testing.T) {
	t.Parallel()
	r, err := Compile(group([]string{"*"}, &registryv1.ToolOverride{Tool: "a_x", Alias: proto.String("b_y")}))
	if err != nil {
		t.Fatal(err)
	}
	err = r.CheckAliases("g", func(n string) bool { return n == "b_y" })
	if err == nil || !strings.Contains(err.Error(), `alias "b_y" of tool "a_x" in group "g" collides`) {
		t.Fatalf("CheckAliases = %v", err)
	}
	// A tool advertised after the group was set, under the alias's name,
	// is left out of the group.
	got := r.Present([]*registryv1.PresentedTool{tool("a", "x"), tool("b", "y")})
	if len(got) != 1 || got[0].GetClient() != "a" {
		t.Fatalf("Present = %v, want only the aliased tool", got)
	}
}
