package advertisement

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func tool(name string) *mcp.Tool {
	return &mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}}
}

func names(s *Set) string {
	var out []string
	for _, t := range s.Tools {
		out = append(out, t.Name)
	}
	return strings.Join(out, ",")
}

func TestBuildFilters(t *testing.T) {
	t.Parallel()
	listed := []*mcp.Tool{tool("a"), tool("b"), tool("c"), tool("d")}
	tests := []struct {
		name        string
		listed      []*mcp.Tool
		opts        Options
		wantTools   string
		wantSkipped []string
	}{
		{"everything by default", listed, Options{}, "a,b,c,d", nil},
		{"the allow list keeps only its names", listed, Options{Allow: []string{"b", "d", "zz"}}, "b,d",
			[]string{`"a": not in allow_tools`, `"c": not in allow_tools`}},
		{"the deny list wins over the allow list", listed, Options{Allow: []string{"a", "b"}, Deny: []string{"b"}}, "a",
			[]string{`"b": in deny_tools`, `"c": not in allow_tools`, `"d": not in allow_tools`}},
		{"the cap keeps the first tools", listed, Options{MaxTools: 2}, "a,b",
			[]string{`"c": over the cap of 2 tools (max_tools)`, `"d": over the cap of 2 tools (max_tools)`}},
		{"a duplicate keeps the first", []*mcp.Tool{tool("a"), {Name: "a", Description: "second"}}, Options{}, "a",
			[]string{`"a": listed twice by the server; the first is advertised`}},
		{"unusable names are skipped", []*mcp.Tool{tool(""), tool(strings.Repeat("n", 257)), tool("bad\x01"), tool("ok (fine)")}, Options{}, "ok (fine)",
			[]string{`"": an empty name is unusable`, fmt.Sprintf("%q: a name longer than 256 bytes is unusable", strings.Repeat("n", 257)),
				`"bad\x01": a name holding control characters is unusable`}},
		{"a schema that is not an object is skipped", []*mcp.Tool{{Name: "s", InputSchema: []any{1}}}, Options{}, "",
			[]string{`"s": its input schema is not a JSON object`}},
		{"a schema that does not compile is skipped", []*mcp.Tool{{Name: "s", InputSchema: map[string]any{"type": 12}}}, Options{}, "",
			[]string{`"s": its input schema does not compile: `}},
		{"a schema with an external reference is skipped, not fetched", []*mcp.Tool{{Name: "s", InputSchema: map[string]any{"$ref": "file:///etc/passwd"}}}, Options{}, "",
			[]string{`"s": its input schema does not compile: `}},
		{"a bad output schema is skipped", []*mcp.Tool{{Name: "s", InputSchema: map[string]any{"type": "object"}, OutputSchema: "str"}}, Options{}, "",
			[]string{`"s": its output schema is not a JSON object`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Build(tt.listed, tt.opts)
			if names(got) != tt.wantTools {
				t.Errorf("tools = %q, want %q", names(got), tt.wantTools)
			}
			if len(got.Skipped) != len(tt.wantSkipped) {
				t.Fatalf("skipped = %q, want %q", got.Skipped, tt.wantSkipped)
			}
			for i, w := range tt.wantSkipped {
				if !strings.HasPrefix(got.Skipped[i], w) {
					t.Errorf("skipped[%d] = %q, want it to start %q", i, got.Skipped[i], w)
				}
			}
		})
	}
}

func TestBuildConvertsEachTool(t *testing.T) {
	t.Parallel()
	readOnly := true
	full := &mcp.Tool{
		Name:         "greet (structured)",
		Title:        "Greeter",
		Description:  strings.Repeat("d", 1500),
		InputSchema:  map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}},
		OutputSchema: map[string]any{"type": "object"},
		Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: readOnly, Title: "ann title"},
	}
	untrusted := Build([]*mcp.Tool{full, {Name: "bare"}}, Options{}).Tools
	if len(untrusted) != 2 {
		t.Fatalf("got %d tools, want 2", len(untrusted))
	}
	g := untrusted[0]
	if g.Name != "greet (structured)" {
		t.Errorf("name = %q: the server's own name is advertised, spaces and all", g.Name)
	}
	if n := utf8.RuneCountInString(g.Description); n != MaxDescription || !strings.HasSuffix(g.Description, "…") {
		t.Errorf("description has %d characters, want %d ending with …", n, MaxDescription)
	}
	if g.GetTitle() != "Greeter" || g.GetOutputSchema() != `{"type":"object"}` {
		t.Errorf("title %q, output schema %q", g.GetTitle(), g.GetOutputSchema())
	}
	if !json.Valid([]byte(g.InputSchema)) || !strings.Contains(g.InputSchema, `"name":{"type":"string"}`) {
		t.Errorf("input schema = %s", g.InputSchema)
	}
	if g.Annotations != nil {
		t.Errorf("an untrusted server's annotations were passed: %s", g.GetAnnotations())
	}
	if untrusted[1].InputSchema != `{"type":"object"}` {
		t.Errorf("a missing input schema became %q, want {\"type\":\"object\"}", untrusted[1].InputSchema)
	}
	trusted := Build([]*mcp.Tool{full}, Options{Trust: true}).Tools[0]
	if !strings.Contains(trusted.GetAnnotations(), `"readOnlyHint":true`) {
		t.Errorf("a trusted server's annotations = %q, want readOnlyHint kept", trusted.GetAnnotations())
	}
	titled := Build([]*mcp.Tool{{Name: "t", Annotations: &mcp.ToolAnnotations{Title: "From annotations"}}}, Options{}).Tools[0]
	if titled.GetTitle() != "From annotations" {
		t.Errorf("title = %q, want the annotations' title when the tool has none", titled.GetTitle())
	}
	set := Build([]*mcp.Tool{full}, Options{})
	if !set.Has("greet (structured)") || set.Has("greet") {
		t.Error("Has does not match the advertised names exactly")
	}
}
