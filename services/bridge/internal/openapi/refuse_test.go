package openapi

import (
	"context"
	"strings"
	"testing"
	"time"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// doc is a small valid 3.1 document with one operation; ops replaces its
// paths.
func doc(paths string) string {
	if paths == "" {
		paths = `"/a":{"get":{"operationId":"a","responses":{"200":{"description":"ok"}}}}`
	}
	return `{"openapi":"3.1.0","info":{"title":"t","version":"1"},"paths":{` + paths + `}}`
}

// What the bridge cannot mount is refused with a sentence naming it.
func TestBadDocumentsAreRefusedWithSentences(t *testing.T) {
	t.Parallel()
	const base = "https://api.example.com"
	for _, c := range []struct {
		name string
		tr   *bridgev1.OpenApiTransport
		want string
	}{
		{"neither JSON nor YAML", &bridgev1.OpenApiTransport{Spec: "{{{", BaseUrl: base}, "the document is neither JSON nor YAML"},
		{"Swagger 2.0", &bridgev1.OpenApiTransport{Spec: `{"swagger":"2.0","info":{"title":"t","version":"1"},"paths":{}}`, BaseUrl: base},
			"the document is Swagger 2.0 (OpenAPI 2.0); the bridge mounts OpenAPI 3.0 and 3.1: convert it first"},
		{"OpenAPI 3.2", &bridgev1.OpenApiTransport{Spec: strings.Replace(doc(""), "3.1.0", "3.2.0", 1), BaseUrl: base}, `the document is OpenAPI "3.2.0"; the bridge mounts OpenAPI 3.0 and 3.1`},
		{"no version", &bridgev1.OpenApiTransport{Spec: `{"info":{}}`, BaseUrl: base}, `the document has no "openapi" field naming its version`},
		{"a version that is a number", &bridgev1.OpenApiTransport{Spec: `openapi: 3.1`, BaseUrl: base}, `the document's "openapi" field is 3.1, not a version string such as "3.1.0"`},
		{"no info", &bridgev1.OpenApiTransport{Spec: `{"openapi":"3.1.0","paths":{}}`, BaseUrl: base}, "the document is not valid OpenAPI 3.1.0: "},
		{"no paths", &bridgev1.OpenApiTransport{Spec: `{"openapi":"3.1.0","info":{"title":"t","version":"1"},"paths":{}}`, BaseUrl: base}, "the document has no paths"},
		{"an external reference", &bridgev1.OpenApiTransport{Spec: doc(`"/a":{"get":{"responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"$ref":"other.json#/X"}}}}}}}`), BaseUrl: base},
			"the document is not OpenAPI that parses: "},
		{"no server", &bridgev1.OpenApiTransport{Spec: doc("")}, "the document names no server: give a base URL (--base-url) for its requests"},
		{"a relative server without the document's URL", &bridgev1.OpenApiTransport{Spec: strings.Replace(doc(""), `"paths"`, `"servers":[{"url":"/v1"}],"paths"`, 1)},
			`the document's server URL "/v1" is not an absolute http:// or https:// URL: give a base URL (--base-url)`},
		{"a base URL with a query", &bridgev1.OpenApiTransport{Spec: doc(""), BaseUrl: base + "/?x=1"}, `base_url "https://api.example.com/?x=1" has a query or fragment`},
		{"credentials over plain http", &bridgev1.OpenApiTransport{Spec: doc(""), BaseUrl: "http://api.example.com", Auth: &bridgev1.OpenApiAuth{BearerToken: "t"}},
			`base URL "http://api.example.com" is plain http, so the API's credentials would cross the network in the clear`},
		{"bearer and basic", &bridgev1.OpenApiTransport{Spec: doc(""), BaseUrl: base, Auth: &bridgev1.OpenApiAuth{BearerToken: "t", Basic: &bridgev1.BasicAuth{Username: "u"}}},
			"auth gives both a bearer token and basic credentials"},
		{"an API key with no place", &bridgev1.OpenApiTransport{Spec: doc(""), BaseUrl: base, Auth: &bridgev1.OpenApiAuth{ApiKey: &bridgev1.ApiKey{Value: "k"}}},
			"the document has 0 apiKey security schemes ([]), so the API key's name and place must be given"},
		{"a cookie API key", &bridgev1.OpenApiTransport{Spec: strings.Replace(doc(""), `"paths"`, `"components":{"securitySchemes":{"c":{"type":"apiKey","in":"cookie","name":"k"}}},"paths"`, 1), BaseUrl: base, Auth: &bridgev1.OpenApiAuth{ApiKey: &bridgev1.ApiKey{Value: "k"}}},
			`security scheme "c" takes its API key in a cookie, which is not supported`},
		{"a spec URL that is no URL", &bridgev1.OpenApiTransport{SpecUrl: "file:///etc/passwd"}, `spec_url "file:///etc/passwd" is not an http:// or https:// URL with a host`},
		{"an object in the query", &bridgev1.OpenApiTransport{Spec: doc(`"/a":{"get":{"operationId":"a","parameters":[{"name":"f","in":"query","schema":{"type":"object"}}],"responses":{"200":{"description":"ok"}}}}`), BaseUrl: base},
			`the document gives no tool: no operation the filters keep can be called: "a" (GET /a): parameter "f" is an object, which is not supported`},
		{"a required cookie", &bridgev1.OpenApiTransport{Spec: doc(`"/a":{"get":{"operationId":"a","parameters":[{"name":"s","in":"cookie","required":true,"schema":{"type":"string"}}],"responses":{"200":{"description":"ok"}}}}`), BaseUrl: base},
			`"a" (GET /a): cookie parameter "s" is not supported`},
		{"a multipart body", &bridgev1.OpenApiTransport{Spec: doc(`"/a":{"post":{"operationId":"a","requestBody":{"content":{"multipart/form-data":{"schema":{"type":"object"}}}},"responses":{"200":{"description":"ok"}}}}`), BaseUrl: base},
			`a multipart body (multipart/form-data) is not supported; only JSON bodies are`},
		{"a deepObject", &bridgev1.OpenApiTransport{Spec: doc(`"/a":{"get":{"operationId":"a","parameters":[{"name":"f","in":"query","style":"deepObject","schema":{"type":"string"}}],"responses":{"200":{"description":"ok"}}}}`), BaseUrl: base},
			`parameter "f" has style "deepObject" in query, which is not supported`},
		{"a header HTTP sets", &bridgev1.OpenApiTransport{Spec: doc(`"/a":{"get":{"operationId":"a","parameters":[{"name":"Host","in":"header","schema":{"type":"string"}}],"responses":{"200":{"description":"ok"}}}}`), BaseUrl: base},
			`header parameter "Host" is set by HTTP itself`},
		{"a parameter in two places", &bridgev1.OpenApiTransport{Spec: doc(`"/a/{id}":{"get":{"operationId":"a","parameters":[{"name":"id","in":"path","required":true,"schema":{"type":"string"}},{"name":"id","in":"query","schema":{"type":"string"}}],"responses":{"200":{"description":"ok"}}}}`), BaseUrl: base},
			`parameter "id" is both in the path and in the query`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(context.Background(), c.tr, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Load = %v\nwant a refusal holding %q", err, c.want)
			}
		})
	}
}

// Whatever the document, Load answers with tools or a one-line sentence,
// and never panics; the tools it gives have schemas that compile.
func FuzzLoad(f *testing.F) {
	f.Add(testkit.PetStoreSpec(f))
	f.Add(doc(""))
	f.Add(`{"openapi":"3.0.0","info":{"title":"t","version":"1"},"paths":{"/x/{a}":{"parameters":[{"name":"a","in":"path","required":true,"schema":{"type":"array","items":{"type":"integer"}}}],"post":{"requestBody":{"content":{"application/json":{"schema":{"$ref":"#/components/schemas/R"}}}},"responses":{"default":{"description":"d"}}}}},"components":{"schemas":{"R":{"type":"object","nullable":true,"properties":{"r":{"$ref":"#/components/schemas/R"}}}}}}`)
	f.Add(`swagger: "2.0"`)
	f.Add(`openapi: 3.1.0`)
	f.Fuzz(func(t *testing.T, spec string) {
		type loaded struct {
			api *API
			err error
		}
		done := make(chan loaded, 1)
		go func() {
			api, err := Load(context.Background(), &bridgev1.OpenApiTransport{Spec: spec, BaseUrl: "https://api.example.com"}, nil)
			done <- loaded{api, err}
		}()
		var api *API
		var err error
		select {
		case l := <-done:
			api, err = l.api, l.err
		case <-time.After(10 * time.Second):
			t.Fatalf("Load has not answered after 10s; the document:\n%q", spec)
		}
		if err != nil {
			if strings.ContainsAny(err.Error(), "\n\r") || err.Error() == "" {
				t.Fatalf("a refusal that is not one line: %q", err)
			}
			return
		}
		if len(api.Tools) == 0 {
			t.Fatal("a document loaded with no tools")
		}
		for _, tool := range api.Tools {
			if tool.GetName() == "" || len(tool.GetName()) > maxName || !api.Has(tool.GetName()) {
				t.Fatalf("tool name %q", tool.GetName())
			}
		}
	})
}
