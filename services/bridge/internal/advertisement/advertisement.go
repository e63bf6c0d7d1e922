// Package advertisement turns the tools an MCP server lists (or a plugin
// manifest names) into the set the bridge advertises for it (docs/design.md §5): the
// allow and deny lists applied, descriptions cut to 1,000 characters, at
// most max_tools kept, a missing input schema replaced by
// {"type":"object"}, annotations passed only for a trusted server. A tool the registry would refuse (an unusable name, a
// duplicate, a schema that does not compile) is left out and named in the
// skipped list with why, so one bad tool never keeps a server's other tools
// from being advertised.
package advertisement

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"google.golang.org/protobuf/proto"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
)

// Defaults and bounds from docs/design.md §5 and the registry's tool rules.
const (
	DefaultMaxTools   = 128
	MaxDescription    = 1000
	MaxToolNameBytes  = 256
	defaultSchemaText = `{"type":"object"}`
)

// Options are a server's advertisement rules.
type Options struct {
	// Allow, when non-empty, keeps only these tool names.
	Allow []string
	// Deny never keeps these tool names.
	Deny []string
	// MaxTools bounds the set; <= 0 means DefaultMaxTools.
	MaxTools int
	// Trust passes the server's annotations through.
	Trust bool
}

// Set is what to advertise, and what was left out.
type Set struct {
	// Tools is the advertisement, in the server's order.
	Tools []*registryv1.Tool
	// Skipped names each tool left out and why, in the server's order.
	Skipped []string
}

// Has reports whether the set advertises a tool named name.
func (s *Set) Has(name string) bool {
	for _, t := range s.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// Build applies opts to the tools an MCP server listed.
func Build(listed []*mcp.Tool, opts Options) *Set {
	return build(listed, func(t *mcp.Tool) string { return t.Name },
		func(t *mcp.Tool) (*registryv1.Tool, error) { return convert(t, opts.Trust) }, opts)
}

// build applies opts to items, in order: name says what an item is called,
// conv turns it into the tool to advertise (or says why it cannot be).
func build[T any](items []T, name func(T) string, conv func(T) (*registryv1.Tool, error), opts Options) *Set {
	limit := opts.MaxTools
	if limit <= 0 {
		limit = DefaultMaxTools
	}
	allow, deny := setOf(opts.Allow), setOf(opts.Deny)
	out := &Set{}
	seen := map[string]bool{}
	for _, item := range items {
		n := name(item)
		skip := func(why string, args ...any) {
			out.Skipped = append(out.Skipped, fmt.Sprintf("%q: ", n)+fmt.Sprintf(why, args...))
		}
		switch {
		case len(allow) > 0 && !allow[n]:
			skip("not in allow_tools")
			continue
		case deny[n]:
			skip("in deny_tools")
			continue
		}
		if err := CheckName(n); err != nil {
			skip("%v", err)
			continue
		}
		if seen[n] {
			skip("listed twice by the server; the first is advertised")
			continue
		}
		tool, err := conv(item)
		if err != nil {
			skip("%v", err)
			continue
		}
		if len(out.Tools) == limit {
			skip("over the cap of %d tools (max_tools)", limit)
			continue
		}
		seen[n] = true
		out.Tools = append(out.Tools, tool)
	}
	return out
}

func setOf(names []string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// CheckName applies the registry's rule for a tool's own name.
func CheckName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("an empty name is unusable")
	case len(name) > MaxToolNameBytes:
		return fmt.Errorf("a name longer than %d bytes is unusable", MaxToolNameBytes)
	case !utf8.ValidString(name):
		return fmt.Errorf("a name that is not UTF-8 is unusable")
	case strings.ContainsFunc(name, unicode.IsControl):
		return fmt.Errorf("a name holding control characters is unusable")
	}
	return nil
}

func convert(t *mcp.Tool, trust bool) (*registryv1.Tool, error) {
	input := defaultSchemaText
	if t.InputSchema != nil {
		s, err := schemaText("input schema", t.InputSchema)
		if err != nil {
			return nil, err
		}
		input = s
	}
	out := &registryv1.Tool{Name: t.Name, Description: cut(t.Description, MaxDescription), InputSchema: input}
	if t.OutputSchema != nil {
		s, err := schemaText("output schema", t.OutputSchema)
		if err != nil {
			return nil, err
		}
		out.OutputSchema = proto.String(s)
	}
	title := t.Title
	if title == "" && t.Annotations != nil {
		title = t.Annotations.Title
	}
	if title != "" {
		out.Title = proto.String(title)
	}
	if trust && t.Annotations != nil {
		b, err := json.Marshal(t.Annotations)
		if err != nil {
			return nil, fmt.Errorf("its annotations do not encode: %v", err)
		}
		out.Annotations = proto.String(string(b))
	}
	return out, nil
}

// schemaText encodes a schema the SDK decoded, and checks that it is an
// object that compiles, as the registry will.
func schemaText(what string, v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("its %s does not encode: %v", what, err)
	}
	if err := CheckSchema(what, string(b)); err != nil {
		return "", fmt.Errorf("its %v", err)
	}
	return string(b), nil
}

// noLoader refuses every external reference: compiling a schema must never
// read a file or reach the network on a server's say-so.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external reference %q is not loaded", url)
}

func compiles(schema []byte) error {
	_, err := Compile(schema)
	return err
}

// Compile compiles a JSON Schema (2020-12 unless it says otherwise) that
// refers to nothing outside itself, for a caller that validates with it.
func Compile(schema []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	const loc = "mem:///schema.json"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, err
	}
	return c.Compile(loc)
}

// cut shortens s to at most n characters, ending with "…" when cut.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, count := 0, 0
	for j := range s {
		if count == n-1 {
			i = j
			break
		}
		count++
	}
	return s[:i] + "…"
}
