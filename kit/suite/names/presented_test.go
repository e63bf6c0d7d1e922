package names_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/switchboard-run/switchboard/kit/suite/names"
)

var shape = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// hostile are tool names a model API would refuse as they are.
var hostile = []string{
	"grep",
	"read file",
	"list(files)",
	"query (sql)",
	"ünïcödé",
	"日本語のツール",
	"emoji 🚀 launch",
	"tab\there",
	"dots.and/slashes\\",
	"_",
	"-",
	" ",
	"a_b",
	"a b",
	strings.Repeat("x", 200),
	strings.Repeat("x", 57),
	strings.Repeat("x", 58),
	strings.Repeat("é", 100),
	strings.Repeat("(", 200),
	"\xff\xfe not utf-8",
}

func TestNameKeepsPlainNamesThatFit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, client, tool, want string
	}{
		{"a plain name is client_tool", "laptop", "grep", "laptop_grep"},
		{"underscores and dashes stay", "build-box", "run_tests-fast", "build-box_run_tests-fast"},
		{"a pair of exactly 64 chars stays", "c", strings.Repeat("t", 62), "c_" + strings.Repeat("t", 62)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := names.Presented(tt.client, tt.tool); got != tt.want {
				t.Fatalf("Name(%q, %q) = %q, want %q", tt.client, tt.tool, got, tt.want)
			}
		})
	}
}

func TestNameOfHostileNames(t *testing.T) {
	t.Parallel()
	clients := []string{"a", "laptop", "build-box-7", strings.Repeat("z", 32)}
	for _, client := range clients {
		seen := map[string]string{}
		for _, tool := range hostile {
			got := names.Presented(client, tool)
			if !shape.MatchString(got) {
				t.Errorf("Name(%q, %q) = %q, which is not 1–64 chars of [A-Za-z0-9_-]", client, tool, got)
			}
			if !names.ValidPresented(got) {
				t.Errorf("Valid(%q) = false for a name Name made", got)
			}
			if !strings.HasPrefix(got, client+"_") {
				t.Errorf("Name(%q, %q) = %q does not start with the client", client, tool, got)
			}
			if again := names.Presented(client, tool); again != got {
				t.Errorf("Name(%q, %q) is not stable: %q then %q", client, tool, got, again)
			}
			if other, ok := seen[got]; ok {
				t.Errorf("tools %q and %q of %q both present as %q", other, tool, client, got)
			}
			seen[got] = tool
		}
	}
}

func TestNameCutsLongPairsWithAHash(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 200)
	got := names.Presented("laptop", long)
	if len(got) != names.MaxPresented {
		t.Fatalf("Name of a 200-char tool is %d chars, want %d", len(got), names.MaxPresented)
	}
	if !regexp.MustCompile(`^laptop_x+_[0-9a-f]{8}$`).MatchString(got) {
		t.Fatalf("Name of a 200-char tool is %q, want laptop_xxx…_<8 hex digits>", got)
	}
	// Two tools that sanitise alike differ by their hashes.
	if a, b := names.Presented("c", "a b"), names.Presented("c", "a(b"); a == b {
		t.Fatalf(`"a b" and "a(b" both present as %q`, a)
	}
	// The hash covers the pair: the same tool of two clients differs beyond
	// the client prefix.
	ha, hb := names.Presented("c1", "a b"), names.Presented("c2", "a b")
	if ha[len(ha)-8:] == hb[len(hb)-8:] {
		t.Fatalf("the hash of %q ignores the client: %q and %q", "a b", ha, hb)
	}
}

// FuzzPresentedName checks the mapping's properties on any tool name and
// any valid client name: the output has the presented shape, starts with
// `<client>_`, and is the same every time.
func FuzzPresentedName(f *testing.F) {
	for _, tool := range hostile {
		f.Add("laptop", tool)
	}
	f.Add("a", "")
	f.Add(strings.Repeat("z", 32), strings.Repeat("y", 31))
	f.Add(strings.Repeat("z", 32), strings.Repeat("y", 32))
	f.Fuzz(func(t *testing.T, client, tool string) {
		if names.CheckClient(client) != nil {
			return // the registry never presents a non-client's tools
		}
		got := names.Presented(client, tool)
		if !shape.MatchString(got) {
			t.Fatalf("Name(%q, %q) = %q, not 1–64 chars of [A-Za-z0-9_-]", client, tool, got)
		}
		if !strings.HasPrefix(got, client+"_") {
			t.Fatalf("Name(%q, %q) = %q does not start with %q", client, tool, got, client+"_")
		}
		if again := names.Presented(client, tool); again != got {
			t.Fatalf("Name(%q, %q) changed: %q then %q", client, tool, got, again)
		}
	})
}
