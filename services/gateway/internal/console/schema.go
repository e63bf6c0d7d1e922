package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// field is one input of the try-a-tool form, made from one property of
// the tool's input schema.
type field struct {
	Name        string   // the property
	Kind        string   // string, integer, number, boolean, enum or json
	Type        string   // the schema's type, as written, for the label
	Description string   // the property's description
	Required    bool     // listed in the schema's required
	Enum        []string // the choices of an enum of strings
}

// inputForm is the form for a tool's input schema: one field per property
// when the schema is an object with properties, otherwise a single JSON
// text area (Raw).
type inputForm struct {
	Fields []field
	Raw    bool
}

// formFor reads a JSON Schema object and lays out its form. A schema it
// cannot read as an object of properties is offered as raw JSON: the tool
// still gets exactly what the operator typed.
func formFor(schema string) inputForm {
	var s struct {
		Type       any                        `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if json.Unmarshal([]byte(schema), &s) != nil || len(s.Properties) == 0 {
		return inputForm{Raw: true}
	}
	var f inputForm
	for name, raw := range s.Properties {
		var p struct {
			Type        any    `json:"type"`
			Description string `json:"description"`
			Enum        []any  `json:"enum"`
		}
		_ = json.Unmarshal(raw, &p)
		fd := field{Name: name, Description: p.Description, Required: slices.Contains(s.Required, name), Kind: "json"}
		if t, ok := p.Type.(string); ok {
			fd.Type = t
			switch t {
			case "string", "integer", "number", "boolean":
				fd.Kind = t
			}
		}
		if fd.Kind == "string" && len(p.Enum) > 0 {
			fd.Kind = "enum"
			for _, e := range p.Enum {
				if str, ok := e.(string); ok {
					fd.Enum = append(fd.Enum, str)
				}
			}
		}
		f.Fields = append(f.Fields, fd)
	}
	slices.SortFunc(f.Fields, func(a, b field) int {
		if a.Required != b.Required { // required fields first
			if a.Required {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return f
}

// maxInputBytes bounds the input the form may build; the gateway's body
// limit bounds the form itself, and the mailbox its own budgets.
const maxInputBytes = 1 << 20

// inputFrom builds the tool's input JSON from the submitted form: each
// field converted to its schema type, empty optional fields left out. A
// value that is not of its type is refused with a sentence naming it.
func (f inputForm) inputFrom(v url.Values) (string, error) {
	if f.Raw {
		raw := strings.TrimSpace(v.Get("input"))
		if raw == "" {
			raw = "{}"
		}
		if !json.Valid([]byte(raw)) {
			return "", fmt.Errorf("the input is not JSON: %.60q", raw)
		}
		return checkSize(raw)
	}
	obj := map[string]json.RawMessage{}
	for _, fd := range f.Fields {
		key := "f." + fd.Name
		val := v.Get(key)
		if fd.Kind == "boolean" {
			b, _ := marshal(val != "")
			obj[fd.Name] = b
			continue
		}
		if val == "" {
			if fd.Required {
				return "", fmt.Errorf("field %q is required", fd.Name)
			}
			continue
		}
		var enc []byte
		var err error
		switch fd.Kind {
		case "string", "enum":
			enc, err = marshal(val)
		case "integer":
			var n int64
			if n, err = strconv.ParseInt(strings.TrimSpace(val), 10, 64); err != nil {
				return "", fmt.Errorf("field %q: %q is not an integer", fd.Name, val)
			}
			enc, err = json.Marshal(n)
		case "number":
			var x float64
			if x, err = strconv.ParseFloat(strings.TrimSpace(val), 64); err != nil {
				return "", fmt.Errorf("field %q: %q is not a number", fd.Name, val)
			}
			enc, err = json.Marshal(x)
		default:
			if !json.Valid([]byte(val)) {
				return "", fmt.Errorf("field %q: %.60q is not JSON", fd.Name, val)
			}
			enc = []byte(val)
		}
		if err != nil {
			return "", fmt.Errorf("field %q: %v", fd.Name, err)
		}
		obj[fd.Name] = enc
	}
	b, err := marshal(obj)
	if err != nil {
		return "", err
	}
	return checkSize(string(b))
}

// marshal encodes v as JSON leaving <, > and & as they are: the tool gets
// the text the operator typed, not its \u003c spelling.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func checkSize(input string) (string, error) {
	if len(input) > maxInputBytes {
		return "", fmt.Errorf("the input is %d bytes; the console sends at most %d", len(input), maxInputBytes)
	}
	return input, nil
}

// pretty indents a JSON document for reading; text that is not JSON is
// shown as it is.
func pretty(doc string) string {
	var buf bytes.Buffer
	if json.Indent(&buf, []byte(doc), "", "  ") != nil {
		return doc
	}
	return buf.String()
}
