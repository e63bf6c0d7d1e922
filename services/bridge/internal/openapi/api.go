package openapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"google.golang.org/protobuf/proto"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/services/bridge/internal/advertisement"
	"github.com/switchboard-run/switchboard/services/bridge/internal/pinned"
)

// API is a loaded document: its operations as tools, and how to reach them.
type API struct {
	// Title, Version and OpenAPI are the document's info.title, info.version
	// and openapi fields.
	Title, Version, OpenAPI string
	// Base is where every request goes.
	Base *url.URL
	// Tools are the operations as tools, in path and method order.
	Tools []*registryv1.Tool
	// Skipped names each operation left out because the bridge cannot call
	// it, and why.
	Skipped []string

	creds pinned.Credentials
	ops   map[string]*tool // by tool name
}

// tool is one operation and what calling it takes.
type tool struct {
	op    *operation
	check *jsonschema.Schema // the input schema, compiled
}

// Load reads the document t names (fetching spec_url with fetch, nil: a
// plain client), checks it and the credentials against it, and builds the
// tools. Every refusal is a sentence naming what is wrong.
func Load(ctx context.Context, t *bridgev1.OpenApiTransport, fetch *http.Client) (*API, error) {
	data, specURL, err := readSpec(ctx, t, fetch)
	if err != nil {
		return nil, err
	}
	doc, err := parse(ctx, data)
	if err != nil {
		return nil, err
	}
	base, err := baseURL(doc, t.GetBaseUrl(), specURL)
	if err != nil {
		return nil, err
	}
	creds, res, err := credentials(doc, t.GetAuth(), base)
	if err != nil {
		return nil, err
	}
	if err := unknownFilter(doc, t.GetInclude(), t.GetExclude()); err != nil {
		return nil, err
	}
	api := &API{OpenAPI: doc.OpenAPI, Base: base, creds: creds, ops: map[string]*tool{}}
	if doc.Info != nil {
		api.Title, api.Version = doc.Info.Title, doc.Info.Version
	}
	include, exclude := set(t.GetInclude()), set(t.GetExclude())
	names := map[string]bool{}
	walkOperations(doc, func(op *operation, o *openapi3.Operation, params openapi3.Parameters) {
		if !kept(o, include, exclude) {
			return
		}
		def, check, err := define(doc, op, o, params, res)
		if err != nil {
			api.Skipped = append(api.Skipped, fmt.Sprintf("%s: %v", op.label(), err))
			return
		}
		def.Name = uniqueName(toolName(op), names)
		api.Tools = append(api.Tools, def)
		api.ops[def.Name] = &tool{op: op, check: check}
	})
	for name, item := range doc.Webhooks {
		if item != nil {
			api.Skipped = append(api.Skipped, fmt.Sprintf("webhook %q: a webhook is a request the API makes, not an operation to call", name))
		}
	}
	if len(api.Tools) == 0 {
		why := "the filters keep no operation"
		if len(api.Skipped) > 0 {
			why = "no operation the filters keep can be called: " + strings.Join(api.Skipped, "; ")
		}
		return nil, fmt.Errorf("the document gives no tool: %s", why)
	}
	return api, nil
}

// define makes the tool of one operation: its description, its input (the
// parameters and `body`) and output schemas, and the input's validator.
func define(doc *openapi3.T, op *operation, o *openapi3.Operation, params openapi3.Parameters, res reserved) (*registryv1.Tool, *jsonschema.Schema, error) {
	if len(o.Callbacks) > 0 {
		return nil, nil, fmt.Errorf("callbacks are not supported: the bridge cannot take the API's requests back")
	}
	in := newSchemas(doc)
	props := map[string]any{}
	required := []string{}
	if err := in.takeParams(op, params, res, props, &required); err != nil {
		return nil, nil, err
	}
	if rb := o.RequestBody; rb != nil && rb.Value != nil {
		mt, media, err := jsonBody(rb.Value.Content)
		if err != nil {
			return nil, nil, err
		}
		if _, taken := props[bodyKey]; taken {
			return nil, nil, fmt.Errorf("a parameter is named %q, which is where a tool's input carries the request body", bodyKey)
		}
		var schema *openapi3.SchemaRef
		if media != nil {
			schema = media.Schema
		}
		body, err := in.value(schema)
		if err != nil {
			return nil, nil, fmt.Errorf("the request body: %v", err)
		}
		if m, ok := body.(map[string]any); ok && rb.Value.Description != "" {
			if _, has := m["description"]; !has {
				m["description"] = rb.Value.Description
			}
		}
		props[bodyKey] = body
		if rb.Value.Required {
			required = append(required, bodyKey)
		}
		op.bodyType = mt
	}
	input, err := in.withDefs(map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false})
	if err != nil {
		return nil, nil, err
	}
	inputText, err := json.Marshal(input)
	if err != nil {
		return nil, nil, fmt.Errorf("its input schema does not encode: %v", err)
	}
	check, err := advertisement.Compile(inputText)
	if err != nil {
		return nil, nil, fmt.Errorf("its input schema does not compile: %v", oneLine(err))
	}
	def := &registryv1.Tool{Description: describe(op, o), InputSchema: string(inputText)}
	if o.Summary != "" {
		def.Title = proto.String(o.Summary)
	}
	out, accept, err := output(doc, o.Responses)
	if err != nil {
		return nil, nil, err
	}
	op.accept = accept
	if out != "" {
		def.OutputSchema = proto.String(out)
	}
	return def, check, nil
}

// output is the schema of the first success response with a JSON object
// body (MCP's output schemas are objects), and the media types the
// operation answers with, for Accept.
func output(doc *openapi3.T, responses *openapi3.Responses) (schema, accept string, err error) {
	if responses == nil {
		return "", "", nil
	}
	codes := make([]string, 0, responses.Len())
	for code := range responses.Map() {
		codes = append(codes, code)
	}
	sort.Strings(codes) // "200" < "201" < "2XX" < "default"
	var types []string
	for _, code := range codes {
		r := responses.Value(code)
		if r == nil || r.Value == nil || !(strings.HasPrefix(code, "2") || code == "default") {
			continue
		}
		mts := make([]string, 0, len(r.Value.Content))
		for mt := range r.Value.Content {
			mts = append(mts, mt)
		}
		sort.Strings(mts)
		for _, mt := range mts {
			if !slices.Contains(types, mt) {
				types = append(types, mt)
			}
			media := r.Value.Content[mt]
			if schema != "" || code == "default" || !isJSON(mt) || media == nil || media.Schema == nil {
				continue
			}
			out := newSchemas(doc)
			root, err := out.root(media.Schema)
			if err != nil {
				return "", "", fmt.Errorf("the %s response: %v", code, err)
			}
			if !isObject(root) {
				continue
			}
			if root, err = out.withDefs(root); err != nil {
				return "", "", fmt.Errorf("the %s response: %v", code, err)
			}
			b, err := json.Marshal(root)
			if err != nil {
				return "", "", fmt.Errorf("the %s response's schema does not encode: %v", code, err)
			}
			if advertisement.CheckSchema("output schema", string(b)) == nil {
				schema = string(b)
			}
		}
	}
	return schema, strings.Join(types, ", "), nil
}

// describe is a tool's description: the operation's summary and
// description, or its method and path when it has neither.
func describe(op *operation, o *openapi3.Operation) string {
	parts := []string{}
	for _, s := range []string{o.Summary, o.Description} {
		if s = strings.TrimSpace(s); s != "" && !slices.Contains(parts, s) {
			parts = append(parts, s)
		}
	}
	if len(parts) == 0 {
		parts = append(parts, op.method+" "+op.path)
	}
	if o.Deprecated {
		parts = append(parts, "(Deprecated.)")
	}
	return strings.Join(parts, "\n\n")
}

func set(names []string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}
