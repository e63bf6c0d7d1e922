package advertisement

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
)

func TestFromManifestAppliesTheServerRules(t *testing.T) {
	t.Parallel()
	full := &registryv1.Tool{Name: "get", Description: strings.Repeat("d", 1200), InputSchema: `{"type":"object"}`,
		Title: proto.String("Get"), OutputSchema: proto.String(`{"type":"object"}`), Annotations: proto.String(`{"readOnlyHint":true}`)}
	plain := func(name string) *registryv1.Tool {
		return &registryv1.Tool{Name: name, InputSchema: `{}`}
	}
	tests := []struct {
		name        string
		tools       []*registryv1.Tool
		opts        Options
		want        []*registryv1.Tool
		wantSkipped []string
	}{
		{"an untrusted manifest's annotations are dropped and descriptions cut", []*registryv1.Tool{full}, Options{},
			[]*registryv1.Tool{{Name: "get", Description: strings.Repeat("d", 999) + "…", InputSchema: `{"type":"object"}`,
				Title: proto.String("Get"), OutputSchema: proto.String(`{"type":"object"}`)}}, nil},
		{"a trusted manifest's annotations pass", []*registryv1.Tool{full}, Options{Trust: true},
			[]*registryv1.Tool{{Name: "get", Description: strings.Repeat("d", 999) + "…", InputSchema: `{"type":"object"}`,
				Title: proto.String("Get"), OutputSchema: proto.String(`{"type":"object"}`), Annotations: proto.String(`{"readOnlyHint":true}`)}}, nil},
		{"the allow and deny lists and the cap apply", []*registryv1.Tool{plain("a"), plain("b"), plain("c"), plain("d")},
			Options{Allow: []string{"a", "b", "c"}, Deny: []string{"b"}, MaxTools: 1},
			[]*registryv1.Tool{plain("a")}, []string{`"b": in deny_tools`, `"c": over the cap of 1 tools (max_tools)`, `"d": not in allow_tools`}},
		{"a schema that does not compile is skipped", []*registryv1.Tool{{Name: "s", InputSchema: `{"type":12}`}, plain("ok")}, Options{},
			[]*registryv1.Tool{plain("ok")}, []string{`"s": its input schema does not compile: `}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			set := FromManifest(tt.tools, tt.opts)
			if len(set.Tools) != len(tt.want) {
				t.Fatalf("advertised %d tools, want %d: %v", len(set.Tools), len(tt.want), set.Tools)
			}
			for i := range set.Tools {
				if !proto.Equal(set.Tools[i], tt.want[i]) {
					t.Errorf("tool %d = %v\nwant %v", i, set.Tools[i], tt.want[i])
				}
			}
			if len(set.Skipped) != len(tt.wantSkipped) {
				t.Fatalf("skipped %q, want %q", set.Skipped, tt.wantSkipped)
			}
			for i, s := range set.Skipped {
				if !strings.HasPrefix(s, tt.wantSkipped[i]) {
					t.Errorf("skipped[%d] = %q, want %q", i, s, tt.wantSkipped[i])
				}
			}
		})
	}
}
