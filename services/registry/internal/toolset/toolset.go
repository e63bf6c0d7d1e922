// Package toolset checks a client's advertised tool set (docs/design.md §3,
// advertise) and encodes it for storing and comparing.
package toolset

import (
	"unicode"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/lib/rawjson"
	"github.com/switchboard-run/switchboard/kit/suite/names"
	"github.com/switchboard-run/switchboard/services/registry/internal/schema"
)

// MaxNameLen bounds a tool's own name, in bytes.
const MaxNameLen = 256

// Schemas is a set of schema texts known to compile. A set's Schemas is
// never modified once Check returns it, so it may be read without a lock.
type Schemas map[string]bool

// Check refuses a set client may not advertise with one sentence naming
// the bad value (INVALID_ARGUMENT; RESOURCE_EXHAUSTED past maxTools), or
// returns each tool's presented name in order and the set's schemas.
// Schemas in known (the set in force) are not compiled again: hosts
// re-advertise on every reconnect, and compiling is most of the cost.
func Check(client string, tools []*registryv1.Tool, maxTools int, known Schemas) ([]string, Schemas, error) {
	// The bound comes first, so an oversized set is refused before any of
	// its schemas is compiled.
	if len(tools) > maxTools {
		return nil, nil, status.Errorf(codes.ResourceExhausted,
			"advertise: %d tools is more than the %d one client may advertise", len(tools), maxTools)
	}
	c := &checker{known: known, compiled: Schemas{}}
	seen := make(map[string]bool, len(tools))
	byPresented := make(map[string]string, len(tools))
	toolNames := make([]string, len(tools))
	for i, t := range tools {
		if !UsableName(t.GetName()) {
			return nil, nil, status.Errorf(codes.InvalidArgument, "advertise: unusable tool name %q", t.GetName())
		}
		if seen[t.GetName()] {
			return nil, nil, status.Errorf(codes.InvalidArgument, "advertise: duplicate tool name %q", t.GetName())
		}
		seen[t.GetName()] = true
		if err := c.checkJSON(t); err != nil {
			return nil, nil, err
		}
		p := names.Presented(client, t.GetName())
		if other, ok := byPresented[p]; ok {
			return nil, nil, status.Errorf(codes.InvalidArgument,
				"advertise: tools %q and %q would both be presented as %q; rename one of them", other, t.GetName(), p)
		}
		byPresented[p] = t.GetName()
		toolNames[i] = p
	}
	return toolNames, c.compiled, nil
}

// UsableName reports whether name can name a tool: 1–256 bytes of UTF-8
// without control characters.
func UsableName(name string) bool {
	if name == "" || len(name) > MaxNameLen || !utf8.ValidString(name) {
		return false
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// checker checks the JSON-valued fields of one set's tools, compiling each
// distinct schema text once.
type checker struct {
	known    Schemas // compiled before this check
	compiled Schemas // this set's schemas, all of which compile
}

// checkJSON checks the JSON-valued fields of one tool.
func (c *checker) checkJSON(t *registryv1.Tool) error {
	if t.GetInputSchema() == "" {
		return status.Errorf(codes.InvalidArgument,
			"advertise: tool %q has an empty input_schema; send a JSON Schema object such as {\"type\":\"object\"}", t.GetName())
	}
	if err := c.checkSchema(t.GetName(), "input_schema", t.GetInputSchema()); err != nil {
		return err
	}
	if t.OutputSchema != nil {
		if err := c.checkSchema(t.GetName(), "output_schema", t.GetOutputSchema()); err != nil {
			return err
		}
	}
	if t.Annotations != nil {
		if err := rawjson.CheckObject("annotations", t.GetAnnotations()); err != nil {
			return status.Errorf(codes.InvalidArgument, "advertise: tool %q: %v", t.GetName(), err)
		}
	}
	return nil
}

func (c *checker) checkSchema(tool, field, text string) error {
	if c.compiled[text] {
		return nil
	}
	if c.known[text] {
		c.compiled[text] = true
		return nil
	}
	if err := rawjson.CheckObject(field, text); err != nil {
		return status.Errorf(codes.InvalidArgument, "advertise: tool %q: %v", tool, err)
	}
	if err := schema.Check(text); err != nil {
		return status.Errorf(codes.InvalidArgument,
			"advertise: tool %q: %s does not compile as a JSON Schema: %v", tool, field, err)
	}
	c.compiled[text] = true
	return nil
}

// Encode is the set's stored form: the deterministic protobuf encoding of
// an Advertised holding only the tools. Equal sets encode to equal bytes,
// so the encoding also says whether a new set differs from the one in
// force; the empty set encodes to no bytes.
func Encode(tools []*registryv1.Tool) ([]byte, error) {
	return proto.MarshalOptions{Deterministic: true}.Marshal(&registryv1.Advertised{Tools: tools})
}

// Decode reads a set Encode wrote.
func Decode(b []byte) ([]*registryv1.Tool, error) {
	var a registryv1.Advertised
	if err := proto.Unmarshal(b, &a); err != nil {
		return nil, err
	}
	return a.GetTools(), nil
}
