package openapi

import (
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"golang.org/x/net/http/httpguts"
)

// methods in the order a path's operations become tools.
var methods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions, http.MethodTrace}

// bodyKey is the input property that carries a request's JSON body.
const bodyKey = "body"

// param is one parameter as a tool takes it and a request sends it.
type param struct {
	name, in string // in: path, query or header
	style    string
	explode  bool
}

// operation is one operation the bridge calls as a tool.
type operation struct {
	id           string // its operationId, or empty
	method, path string // the path as the document writes it
	params       []param
	bodyType     string // the JSON media type of its body; empty: it takes none
	accept       string
}

// label names an operation in sentences: its operationId and where it is.
func (o *operation) label() string {
	if o.id != "" {
		return fmt.Sprintf("%q (%s %s)", o.id, o.method, o.path)
	}
	return o.method + " " + o.path
}

// reserved are the credentials' header and query names: a tool's input
// never sets them.
type reserved struct {
	headers map[string]bool // canonical names
	query   map[string]bool
}

// walkOperations calls f for each operation of the document, in path order
// and then method order, with the path's parameters merged into the
// operation's (the operation's win).
func walkOperations(doc *openapi3.T, f func(op *operation, o *openapi3.Operation, params openapi3.Parameters)) {
	paths := doc.Paths.Map()
	keys := make([]string, 0, len(paths))
	for k := range paths {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, path := range keys {
		item := paths[path]
		if item == nil {
			continue
		}
		for _, method := range methods {
			o := item.GetOperation(method)
			if o == nil {
				continue
			}
			f(&operation{id: o.OperationID, method: method, path: path}, o, mergeParams(item.Parameters, o.Parameters))
		}
	}
}

func mergeParams(path, op openapi3.Parameters) openapi3.Parameters {
	out := slices.Clone(op)
	for _, p := range path {
		if p == nil || p.Value == nil {
			continue
		}
		if op.GetByInAndName(p.Value.In, p.Value.Name) == nil {
			out = append(out, p)
		}
	}
	return out
}

// kept says whether the filters keep an operation: include (when given)
// names its operationId or one of its tags, and exclude names neither.
func kept(o *openapi3.Operation, include, exclude map[string]bool) bool {
	names := append([]string{o.OperationID}, o.Tags...)
	for _, n := range names {
		if n != "" && exclude[n] {
			return false
		}
	}
	if len(include) == 0 {
		return true
	}
	for _, n := range names {
		if n != "" && include[n] {
			return true
		}
	}
	return false
}

// unknownFilter names the first include or exclude entry that is neither an
// operationId nor a tag of the document: a typo would otherwise mount
// nothing, or everything, without a word.
func unknownFilter(doc *openapi3.T, include, exclude []string) error {
	known := map[string]bool{}
	walkOperations(doc, func(_ *operation, o *openapi3.Operation, _ openapi3.Parameters) {
		known[o.OperationID] = true
		for _, t := range o.Tags {
			known[t] = true
		}
	})
	for _, f := range []struct {
		what  string
		names []string
	}{{"include", include}, {"exclude", exclude}} {
		for _, n := range f.names {
			if n == "" || !known[n] {
				return fmt.Errorf("%s %q names no operationId or tag of the document", f.what, n)
			}
		}
	}
	return nil
}

// takeParams checks o's parameters and records how each is sent, adding
// each to the input's properties; it says why an operation cannot be a tool.
func (s *schemas) takeParams(op *operation, params openapi3.Parameters, res reserved, props map[string]any, required *[]string) error {
	where := map[string]string{}
	for _, ref := range params {
		p := ref.Value
		if p == nil {
			continue
		}
		if skip, err := paramSupported(p, res); err != nil || skip {
			if err != nil {
				return err
			}
			continue
		}
		if in, dup := where[p.Name]; dup {
			return fmt.Errorf("parameter %q is both in the %s and in the %s, and a tool's input has one field of a name", p.Name, in, p.In)
		}
		where[p.Name] = p.In
		v, err := s.value(p.Schema)
		if err != nil {
			return fmt.Errorf("parameter %q: %v", p.Name, err)
		}
		m, _ := v.(map[string]any)
		if m == nil {
			m = map[string]any{}
		}
		if err := scalarOrList(p.Name, m); err != nil {
			return err
		}
		if p.Description != "" {
			if _, has := m["description"]; !has {
				m["description"] = p.Description
			}
		}
		props[p.Name] = m
		if p.Required || p.In == openapi3.ParameterInPath {
			*required = append(*required, p.Name)
		}
		op.params = append(op.params, param{name: p.Name, in: p.In, style: p.Style, explode: explodes(p)})
	}
	return nil
}

// paramSupported says why a parameter cannot be sent, or that it is left
// out of the input (skip): one the specification says to ignore, an
// optional cookie, or one the bridge's credentials fill.
func paramSupported(p *openapi3.Parameter, res reserved) (skip bool, err error) {
	switch p.In {
	case openapi3.ParameterInCookie:
		if p.Required {
			return false, fmt.Errorf("cookie parameter %q is not supported", p.Name)
		}
		return true, nil
	case openapi3.ParameterInHeader:
		canon := http.CanonicalHeaderKey(p.Name)
		switch {
		case canon == "Accept" || canon == "Content-Type" || canon == "Authorization":
			return true, nil // OpenAPI: such a definition SHALL be ignored
		case res.headers[canon]:
			return true, nil
		case !httpguts.ValidHeaderFieldName(p.Name):
			return false, fmt.Errorf("header parameter %q is not a valid HTTP header name", p.Name)
		case slices.Contains([]string{"Host", "Content-Length", "Transfer-Encoding", "Connection", "Te", "Trailer", "Upgrade", "Cookie"}, canon),
			strings.HasPrefix(canon, "Proxy-"):
			return false, fmt.Errorf("header parameter %q is set by HTTP itself, not by a tool's input", p.Name)
		}
	case openapi3.ParameterInQuery:
		if res.query[p.Name] {
			return true, nil
		}
	}
	if p.Schema == nil {
		return false, fmt.Errorf("parameter %q is described by content rather than a schema, which is not supported", p.Name)
	}
	style := p.Style
	ok := style == "" ||
		(p.In == openapi3.ParameterInPath && style == openapi3.SerializationSimple) ||
		(p.In == openapi3.ParameterInHeader && style == openapi3.SerializationSimple) ||
		(p.In == openapi3.ParameterInQuery && slices.Contains([]string{openapi3.SerializationForm, openapi3.SerializationSpaceDelimited, openapi3.SerializationPipeDelimited}, style))
	if !ok {
		return false, fmt.Errorf("parameter %q has style %q in %s, which is not supported", p.Name, style, p.In)
	}
	return false, nil
}

// scalarOrList refuses a parameter schema that admits objects: the bridge
// sends strings, numbers, booleans and arrays of them.
func scalarOrList(name string, m map[string]any) error {
	types := typeNames(m)
	if slices.Contains(types, "object") || (types == nil && isObject(m)) {
		return fmt.Errorf("parameter %q is an object, which is not supported: only strings, numbers, booleans and arrays of them are sent in a path, query or header", name)
	}
	if items, ok := m["items"].(map[string]any); ok && (slices.Contains(typeNames(items), "object") || slices.Contains(typeNames(items), "array")) {
		return fmt.Errorf("parameter %q is an array of objects or arrays, which is not supported", name)
	}
	return nil
}

func explodes(p *openapi3.Parameter) bool {
	if p.Explode != nil {
		return *p.Explode
	}
	return p.In == openapi3.ParameterInQuery && (p.Style == "" || p.Style == openapi3.SerializationForm)
}

// jsonBody picks the JSON media type of a request body and says why there
// is none the bridge can send.
func jsonBody(content openapi3.Content) (string, *openapi3.MediaType, error) {
	types := make([]string, 0, len(content))
	for t := range content {
		types = append(types, t)
	}
	sort.Strings(types)
	for _, t := range types {
		if isJSON(t) {
			return t, content[t], nil
		}
	}
	for _, t := range types {
		switch base := mediaBase(t); {
		case base == "application/x-www-form-urlencoded":
			return "", nil, fmt.Errorf("a form body (%s) is not supported; only JSON bodies are", t)
		case strings.HasPrefix(base, "multipart/"):
			return "", nil, fmt.Errorf("a multipart body (%s) is not supported; only JSON bodies are", t)
		}
	}
	return "", nil, fmt.Errorf("a request body of type %s is not supported; only JSON bodies are", strings.Join(types, ", "))
}

// isJSON says whether a media type is JSON: application/json, or any
// type with a +json suffix.
func isJSON(t string) bool {
	base := mediaBase(t)
	return base == "application/json" || strings.HasSuffix(base, "+json")
}

func mediaBase(t string) string {
	base, _, _ := strings.Cut(t, ";")
	return strings.ToLower(strings.TrimSpace(base))
}
