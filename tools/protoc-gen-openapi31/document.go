package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// finish makes gnostic's OpenAPI 3.0 document 3.1 and merges the
// handwritten fragment into it (its info, servers, security and tags
// replace gnostic's; its paths and components are added, and may not
// repeat one), returning the document as indented JSON.
func finish(generated []byte, handwritten string) (string, error) {
	doc, err := mapping(generated, "gnostic's document")
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(handwritten)
	if err != nil {
		return "", err
	}
	frag, err := mapping(data, handwritten)
	if err != nil {
		return "", err
	}
	set(doc, "openapi", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "3.1.0"})
	for i := 0; i < len(frag.Content); i += 2 {
		key, val := frag.Content[i].Value, frag.Content[i+1]
		switch key {
		case "openapi":
		case "paths":
			if err := merge(doc, key, val, handwritten); err != nil {
				return "", err
			}
		case "components":
			for j := 0; j < len(val.Content); j += 2 {
				comps := get(doc, "components")
				if comps == nil {
					comps = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
					set(doc, "components", comps)
				}
				if err := merge(comps, val.Content[j].Value, val.Content[j+1], handwritten); err != nil {
					return "", err
				}
			}
		default:
			set(doc, key, val)
		}
	}
	nullable(doc)
	if err := undotPaths(get(doc, "paths")); err != nil {
		return "", err
	}
	var b bytes.Buffer
	if err := writeJSON(&b, doc); err != nil {
		return "", err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b.Bytes(), "", "  "); err != nil {
		return "", err
	}
	return out.String() + "\n", nil
}

func mapping(data []byte, what string) (*yaml.Node, error) {
	var n yaml.Node
	if err := yaml.Unmarshal(data, &n); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if len(n.Content) != 1 || n.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s is not a YAML mapping", what)
	}
	return n.Content[0], nil
}

// get is m's value under key, or nil.
func get(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// set puts val under key in m, in place of what was there.
func set(m *yaml.Node, key string, val *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = val
			return
		}
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, val)
}

// merge adds the entries of from to m's mapping under key.
func merge(m *yaml.Node, key string, from *yaml.Node, what string) error {
	into := get(m, key)
	if into == nil {
		set(m, key, from)
		return nil
	}
	for i := 0; i+1 < len(from.Content); i += 2 {
		if get(into, from.Content[i].Value) != nil {
			return fmt.Errorf("%s: %s %q is generated from the protos already", what, key, from.Content[i].Value)
		}
		into.Content = append(into.Content, from.Content[i], from.Content[i+1])
	}
	return nil
}

var dotted = regexp.MustCompile(`\{([A-Za-z0-9_]+\.)+([A-Za-z0-9_]+)\}`)

// undotPaths names a path parameter bound to a field of a field
// ({group.workspace}) by its last part ({workspace}), and joins its path
// with the one it then equals: OpenAPI holds two templates that differ only
// in their parameters' names to be one path, and refuses both.
func undotPaths(paths *yaml.Node) error {
	if paths == nil {
		return nil
	}
	for i := 0; i+1 < len(paths.Content); i += 2 {
		key := paths.Content[i].Value
		if !dotted.MatchString(key) {
			continue
		}
		item := paths.Content[i+1]
		for j := 0; j+1 < len(item.Content); j += 2 {
			params := get(item.Content[j+1], "parameters")
			if params == nil {
				continue
			}
			for _, p := range params.Content {
				if name, in := get(p, "name"), get(p, "in"); name != nil && in != nil && in.Value == "path" {
					name.Value = name.Value[strings.LastIndex(name.Value, ".")+1:]
				}
			}
		}
		plain := dotted.ReplaceAllString(key, "{$2}")
		into := get(paths, plain)
		if into == nil {
			paths.Content[i].Value = plain
			continue
		}
		for j := 0; j+1 < len(item.Content); j += 2 {
			if get(into, item.Content[j].Value) != nil {
				return fmt.Errorf("paths %q and %q both have %s", key, plain, item.Content[j].Value)
			}
			into.Content = append(into.Content, item.Content[j], item.Content[j+1])
		}
		paths.Content = append(paths.Content[:i], paths.Content[i+2:]...)
		i -= 2
	}
	return nil
}

// nullable rewrites OpenAPI 3.0's `nullable: true` as 3.1's type list.
func nullable(n *yaml.Node) {
	for _, c := range n.Content {
		nullable(c)
	}
	if n.Kind != yaml.MappingNode {
		return
	}
	nv := get(n, "nullable")
	if nv == nil {
		return
	}
	if t := get(n, "type"); t != nil && t.Kind == yaml.ScalarNode && nv.Value == "true" {
		set(n, "type", &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{
			{Kind: yaml.ScalarNode, Tag: "!!str", Value: t.Value}, {Kind: yaml.ScalarNode, Tag: "!!str", Value: "null"}}})
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "nullable" {
			n.Content = append(n.Content[:i], n.Content[i+2:]...)
			return
		}
	}
}

// writeJSON writes a YAML node as JSON, keys in their order.
func writeJSON(b *bytes.Buffer, n *yaml.Node) error {
	switch n.Kind {
	case yaml.AliasNode:
		return writeJSON(b, n.Alias)
	case yaml.MappingNode:
		b.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				b.WriteByte(',')
			}
			k, _ := json.Marshal(n.Content[i].Value)
			b.Write(k)
			b.WriteByte(':')
			if err := writeJSON(b, n.Content[i+1]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeJSON(b, c); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			return err
		}
		if n.Tag == "!!str" {
			v = n.Value
		}
		s, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		b.Write(s)
	default:
		return fmt.Errorf("line %d: a YAML node of kind %d has no JSON form", n.Line, n.Kind)
	}
	return nil
}
