package openapi

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// componentPrefix is where a document's named schemas are referred to;
// a tool's schema carries the ones it uses under $defs instead.
const (
	componentPrefix = "#/components/schemas/"
	defsPrefix      = "#/$defs/"
	// maxDefs bounds the named schemas one tool's schema carries.
	maxDefs = 256
)

// schemas turns a document's schemas into JSON Schema 2020-12 values a
// tool can carry: references to components become references into the
// tool's own $defs, and an OpenAPI 3.0 schema's dialect (nullable, boolean
// exclusive bounds, example) becomes JSON Schema's.
type schemas struct {
	doc  *openapi3.T
	is30 bool
	defs map[string]any // converted components this tool uses
	todo []string
}

func newSchemas(doc *openapi3.T) *schemas {
	return &schemas{doc: doc, is30: doc.IsOpenAPI30(), defs: map[string]any{}}
}

// value converts ref (nil: an empty schema, which takes anything).
func (s *schemas) value(ref *openapi3.SchemaRef) (any, error) {
	if ref == nil {
		return map[string]any{}, nil
	}
	raw, err := json.Marshal(ref)
	if err != nil {
		return nil, fmt.Errorf("a schema does not encode: %v", err)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("a schema does not encode: %v", err)
	}
	return s.walk(v)
}

// root is ref converted as a tool's top-level schema: a reference is
// replaced by the schema it names, so the root says its own type.
func (s *schemas) root(ref *openapi3.SchemaRef) (map[string]any, error) {
	if ref != nil && ref.Ref != "" && ref.Value != nil {
		ref = &openapi3.SchemaRef{Value: ref.Value}
	}
	v, err := s.value(ref)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return map[string]any{}, nil // a boolean schema: true takes anything
	}
	return m, nil
}

// The keywords whose values are schemas, maps of them, or arrays of them:
// only these are walked, so a property named "example" stays a property.
var (
	schemaKeys     = []string{"items", "not", "additionalProperties", "contains", "propertyNames", "if", "then", "else", "unevaluatedItems", "unevaluatedProperties", "contentSchema"}
	schemaMapKeys  = []string{"properties", "patternProperties", "$defs", "dependentSchemas"}
	schemaListKeys = []string{"allOf", "anyOf", "oneOf", "prefixItems"}
)

// walk rewrites one schema (a JSON object, or a boolean) in place.
func (s *schemas) walk(v any) (any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return v, nil
	}
	if ref, ok := m["$ref"].(string); ok {
		r, err := s.ref(ref)
		if err != nil {
			return nil, err
		}
		m["$ref"] = r
	}
	var err error
	for _, k := range schemaKeys {
		if sub, ok := m[k]; ok {
			if m[k], err = s.walk(sub); err != nil {
				return nil, err
			}
		}
	}
	for _, k := range schemaMapKeys {
		if sub, ok := m[k].(map[string]any); ok {
			for name, x := range sub {
				if sub[name], err = s.walk(x); err != nil {
					return nil, err
				}
			}
		}
	}
	for _, k := range schemaListKeys {
		if sub, ok := m[k].([]any); ok {
			for i, x := range sub {
				if sub[i], err = s.walk(x); err != nil {
					return nil, err
				}
			}
		}
	}
	s.dialect(m)
	return m, nil
}

// ref rewrites a reference to a component as one into $defs, noting the
// component to carry.
func (s *schemas) ref(ref string) (string, error) {
	rest, ok := strings.CutPrefix(ref, componentPrefix)
	if !ok {
		return "", fmt.Errorf("schema reference %q is not to #/components/schemas; the bridge resolves only those", ref)
	}
	name, _, _ := strings.Cut(rest, "/")
	name = strings.ReplaceAll(strings.ReplaceAll(name, "~1", "/"), "~0", "~")
	if _, seen := s.defs[name]; !seen && !slices.Contains(s.todo, name) {
		if len(s.defs)+len(s.todo) >= maxDefs {
			return "", fmt.Errorf("a schema refers to more than %d named schemas", maxDefs)
		}
		s.todo = append(s.todo, name)
	}
	return defsPrefix + rest, nil
}

// dialect makes one schema object JSON Schema 2020-12: OpenAPI's own
// keywords dropped and 3.0's spellings rewritten.
func (s *schemas) dialect(m map[string]any) {
	delete(m, "discriminator")
	delete(m, "xml")
	delete(m, "externalDocs")
	if !s.is30 {
		return
	}
	if ex, ok := m["example"]; ok {
		delete(m, "example")
		if _, has := m["examples"]; !has {
			m["examples"] = []any{ex}
		}
	}
	if n, _ := m["nullable"].(bool); n {
		switch t := m["type"].(type) {
		case string:
			m["type"] = []any{t, "null"}
		case []any:
			if !slices.Contains(t, any("null")) {
				m["type"] = append(t, "null")
			}
		}
	}
	delete(m, "nullable")
	for _, b := range []struct{ excl, bound string }{{"exclusiveMinimum", "minimum"}, {"exclusiveMaximum", "maximum"}} {
		e, ok := m[b.excl].(bool)
		if !ok {
			continue
		}
		delete(m, b.excl)
		if bound, has := m[b.bound]; e && has {
			m[b.excl] = bound
			delete(m, b.bound)
		}
	}
}

// withDefs adds the components the converted schemas refer to (and those
// they refer to in turn) to root's $defs.
func (s *schemas) withDefs(root map[string]any) (map[string]any, error) {
	for len(s.todo) > 0 {
		name := s.todo[0]
		s.todo = s.todo[1:]
		var comp *openapi3.SchemaRef
		if s.doc.Components != nil {
			comp = s.doc.Components.Schemas[name]
		}
		if comp == nil {
			return nil, fmt.Errorf("schema %q is referred to but not defined in #/components/schemas", name)
		}
		s.defs[name] = nil // taken: a cycle refers to it and does not queue it again
		v, err := s.value(comp)
		if err != nil {
			return nil, err
		}
		s.defs[name] = v
	}
	if len(s.defs) > 0 {
		root["$defs"] = s.defs
	}
	return root, nil
}

// isObject says whether a converted schema takes only JSON objects (the
// only output schema MCP admits, and the only request body a tool's
// `body` can describe fully).
func isObject(m map[string]any) bool {
	switch t := m["type"].(type) {
	case string:
		return t == "object"
	case nil:
		_, props := m["properties"]
		return props
	}
	return false
}

// typeNames lists the JSON types a converted schema admits; nil when it
// does not say.
func typeNames(m map[string]any) []string {
	switch t := m["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, x := range t {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
