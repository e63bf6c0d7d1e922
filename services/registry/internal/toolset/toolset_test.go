package toolset_test

import (
	"bytes"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/services/registry/internal/toolset"
)

func TestUsableName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		tool string
		want bool
	}{
		{"a plain name is usable", "grep", true},
		{"spaces, parentheses and unicode are usable", "list (ünï) 🚀", true},
		{"256 bytes are usable", strings.Repeat("x", 256), true},
		{"the empty name is not", "", false},
		{"257 bytes are not", strings.Repeat("x", 257), false},
		{"invalid UTF-8 is not", "a\xffb", false},
		{"a newline is not", "a\nb", false},
		{"DEL is not", "a\x7fb", false},
		{"a C1 control is not", "a\u0085b", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := toolset.UsableName(tt.tool); got != tt.want {
				t.Fatalf("UsableName(%q) = %v, want %v", tt.tool, got, tt.want)
			}
		})
	}
}

// Invalid UTF-8 cannot cross gRPC (proto3 strings are checked on the
// wire), so its refusal sentence is checked here.
func TestCheckRefusesInvalidUTF8(t *testing.T) {
	t.Parallel()
	_, _, err := toolset.Check("c", []*registryv1.Tool{{Name: "a\xffb", InputSchema: `{}`}}, 10, nil)
	if status.Code(err) != codes.InvalidArgument || status.Convert(err).Message() != `advertise: unusable tool name "a\xffb"` {
		t.Fatalf("Check = %v, want INVALID_ARGUMENT advertise: unusable tool name \"a\\xffb\"", err)
	}
}

func TestEncodeComparesSets(t *testing.T) {
	t.Parallel()
	a := []*registryv1.Tool{{Name: "a", InputSchema: `{}`}, {Name: "b", InputSchema: `{}`, SubjectCwd: proto.Bool(false)}}
	same := []*registryv1.Tool{proto.CloneOf(a[0]), proto.CloneOf(a[1])}
	unset := []*registryv1.Tool{proto.CloneOf(a[0]), {Name: "b", InputSchema: `{}`}}
	ea, _ := toolset.Encode(a)
	es, _ := toolset.Encode(same)
	eu, _ := toolset.Encode(unset)
	ee, _ := toolset.Encode(nil)
	if !bytes.Equal(ea, es) {
		t.Fatal("equal sets encode differently")
	}
	if bytes.Equal(ea, eu) {
		t.Fatal("subject_cwd false and absent encode alike; absence must be kept")
	}
	if len(ee) != 0 {
		t.Fatalf("the empty set encodes to %d bytes, want none", len(ee))
	}
	back, err := toolset.Decode(ea)
	if err != nil || len(back) != 2 || !proto.Equal(back[1], a[1]) {
		t.Fatalf("Decode(Encode(a)) = %v, %v", back, err)
	}
}

func TestCheckCompilesEachSchemaOnceAndTrustsKnownOnes(t *testing.T) {
	t.Parallel()
	bad := `{"type":"objekt"}`
	set := []*registryv1.Tool{{Name: "a", InputSchema: bad}}
	if _, _, err := toolset.Check("c", set, 10, nil); err == nil {
		t.Fatal("a schema that does not compile passed")
	}
	// A text the set in force holds compiled when it was stored; Check
	// takes known at its word (the registry passes only the set in force).
	if _, _, err := toolset.Check("c", set, 10, toolset.Schemas{bad: true}); err != nil {
		t.Fatalf("a known schema was compiled again: %v", err)
	}
	good := `{"type":"object"}`
	out := `{"type":"string"}`
	_, schemas, err := toolset.Check("c", []*registryv1.Tool{{Name: "a", InputSchema: good}, {Name: "b", InputSchema: good, OutputSchema: proto.String(out)}}, 10, nil)
	if err != nil || len(schemas) != 2 || !schemas[good] || !schemas[out] {
		t.Fatalf("Check = %v, %v; want both schema texts", schemas, err)
	}
}
