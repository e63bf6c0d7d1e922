// Package openapi mounts an HTTP API an OpenAPI 3.0 or 3.1 document
// describes as a tool host (docs/connectors.md): each operation the
// filters keep becomes a tool, and a call of the tool is the operation's
// HTTP request, made by the bridge with its own credentials, pinned to the
// API's origin. The document is parsed by kin-openapi; what this package
// does not support (callbacks, form bodies, object parameters, cookies…)
// is refused with a sentence naming it.
package openapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"go.yaml.in/yaml/v4"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
)

// Bounds on a document.
const (
	// MaxSpecBytes bounds a document read from spec_url.
	MaxSpecBytes = 8 << 20
	// MaxInlineSpecBytes bounds a document stored with the mount (the
	// store keeps a mount in at most 1 MiB).
	MaxInlineSpecBytes = 1000 << 10
	// fetchTimeout bounds reading a document from its URL.
	fetchTimeout = 30 * time.Second
)

// readSpec returns the document's text: the inline spec, or what spec_url
// serves. The URL is read without credentials: they are for the API.
func readSpec(ctx context.Context, t *bridgev1.OpenApiTransport, client *http.Client) ([]byte, *url.URL, error) {
	if t.GetSpec() != "" {
		if len(t.GetSpec()) > MaxInlineSpecBytes {
			return nil, nil, fmt.Errorf("the document is %d bytes, more than the %d a mount may store: serve it at a URL and give that as spec_url", len(t.GetSpec()), MaxInlineSpecBytes)
		}
		return []byte(t.GetSpec()), nil, nil
	}
	where, err := url.Parse(t.GetSpecUrl())
	if err != nil || (where.Scheme != "http" && where.Scheme != "https") || where.Host == "" {
		return nil, nil, fmt.Errorf("spec_url %q is not an http:// or https:// URL with a host", t.GetSpecUrl())
	}
	if client == nil {
		client = &http.Client{}
	}
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, where.String(), nil)
	if err != nil {
		return nil, nil, fmt.Errorf("spec_url %q: %w", where.Redacted(), err)
	}
	req.Header.Set("Accept", "application/json, application/yaml, text/yaml, */*;q=0.5")
	res, err := client.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the document from %s failed: %w", where.Redacted(), err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("reading the document from %s: the server answered %s", where.Redacted(), res.Status)
	}
	data, err := io.ReadAll(io.LimitReader(res.Body, MaxSpecBytes+1))
	if err != nil {
		return nil, nil, fmt.Errorf("reading the document from %s failed: %w", where.Redacted(), err)
	}
	if len(data) > MaxSpecBytes {
		return nil, nil, fmt.Errorf("the document at %s is larger than %d bytes", where.Redacted(), MaxSpecBytes)
	}
	return data, where, nil
}

// parse loads and validates a document, refusing what is not OpenAPI 3.0
// or 3.1. External references are never followed: a document cannot make
// the bridge read a file or reach the network.
func parse(ctx context.Context, data []byte) (doc *openapi3.T, err error) {
	// The parser is a third party's and the document anyone's: a panic in
	// it is a refusal of the document, not the end of the bridge.
	defer func() {
		if r := recover(); r != nil {
			doc, err = nil, fmt.Errorf("the document could not be parsed (the parser failed: %v)", r)
		}
	}()
	if err := version(data); err != nil {
		return nil, err
	}
	loader := openapi3.NewLoader()
	loader.Context = ctx
	loader.IsExternalRefsAllowed = false
	doc, err = loader.LoadFromData(data)
	if err != nil {
		return nil, fmt.Errorf("the document is not OpenAPI that parses: %v", oneLine(err))
	}
	if !doc.IsOpenAPI30() && doc.OpenAPIMajorMinor() != "3.1" {
		return nil, fmt.Errorf("the document is OpenAPI %q; the bridge mounts OpenAPI 3.0 and 3.1", doc.OpenAPI)
	}
	if err := doc.Validate(ctx, openapi3.DisableExamplesValidation(), openapi3.DisableSchemaDefaultsValidation()); err != nil {
		return nil, fmt.Errorf("the document is not valid OpenAPI %s: %v", doc.OpenAPI, oneLine(err))
	}
	if doc.Paths == nil || doc.Paths.Len() == 0 {
		return nil, errors.New("the document has no paths, so it has no operations to mount")
	}
	return doc, nil
}

// version refuses a Swagger 2.0 document, or none at all, before the
// parser reads it as a 3.x document with fields missing.
func version(data []byte) error {
	var head struct {
		OpenAPI any `json:"openapi" yaml:"openapi"`
		Swagger any `json:"swagger" yaml:"swagger"`
	}
	if err := unmarshalAny(data, &head); err != nil {
		return fmt.Errorf("the document is neither JSON nor YAML: %v", oneLine(err))
	}
	switch v := head.OpenAPI.(type) {
	case string:
		if strings.HasPrefix(v, "3.0") || strings.HasPrefix(v, "3.1") {
			return nil
		}
		return fmt.Errorf("the document is OpenAPI %q; the bridge mounts OpenAPI 3.0 and 3.1", v)
	case nil:
		if head.Swagger != nil {
			return fmt.Errorf("the document is Swagger %v (OpenAPI 2.0); the bridge mounts OpenAPI 3.0 and 3.1: convert it first", head.Swagger)
		}
		return errors.New(`the document has no "openapi" field naming its version; the bridge mounts OpenAPI 3.0 and 3.1`)
	default:
		return fmt.Errorf(`the document's "openapi" field is %v, not a version string such as "3.1.0"`, v)
	}
}

// baseURL is where the API's requests go: the override, else the
// document's first server (its variables at their defaults), resolved
// against the document's own URL when relative. A document read from a
// URL that names no server is served at "/" there, as OpenAPI says.
func baseURL(doc *openapi3.T, override string, specURL *url.URL) (*url.URL, error) {
	raw := override
	what := "base_url"
	if raw == "" && (len(doc.Servers) == 0 || doc.Servers[0] == nil) {
		if specURL == nil {
			return nil, errors.New("the document names no server: give a base URL (--base-url) for its requests")
		}
		raw, what = "/", "the document's default server URL"
	} else if raw == "" {
		s := doc.Servers[0]
		raw, what = s.URL, "the document's server URL"
		for name, v := range s.Variables {
			if v != nil {
				raw = strings.ReplaceAll(raw, "{"+name+"}", v.Default)
			}
		}
		if strings.ContainsAny(raw, "{}") {
			return nil, fmt.Errorf("the document's server URL %q has a variable without a default: give a base URL (--base-url)", s.URL)
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%s %q is not a URL: %v", what, raw, err)
	}
	if !u.IsAbs() && override == "" && specURL != nil {
		u = specURL.ResolveReference(u)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s %q is not an absolute http:// or https:// URL: give a base URL (--base-url) for the API's requests", what, raw)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%s %q has a query or fragment; a base URL is a scheme, host and path", what, raw)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

// oneLine keeps an error's sentence on one line and bounded: the parser's
// errors can quote a whole schema.
func oneLine(err error) string {
	s := strings.Join(strings.Fields(err.Error()), " ")
	if len(s) > 600 {
		s = s[:600] + "…"
	}
	return s
}

// unmarshalAny reads JSON or YAML (JSON is YAML) into v.
func unmarshalAny(data []byte, v any) error {
	return yaml.Unmarshal(data, v)
}
