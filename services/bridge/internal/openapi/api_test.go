package openapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// load loads t's document, failing the test on a refusal.
func load(t *testing.T, tr *bridgev1.OpenApiTransport) *API {
	t.Helper()
	api, err := Load(context.Background(), tr, nil)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return api
}

func byName(api *API) map[string]*registryv1.Tool {
	out := map[string]*registryv1.Tool{}
	for _, tool := range api.Tools {
		out[tool.GetName()] = tool
	}
	return out
}

// schemaOf decodes a tool's schema text.
func schemaOf(t *testing.T, text string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(text), &m); err != nil {
		t.Fatalf("schema %s: %v", text, err)
	}
	return m
}

// The pet store's operations become tools named by operationId (or method
// and path), their inputs made of the parameters and `body`, their outputs
// the object responses; what the bridge cannot call is left out, named.
func TestAPetStoreDocumentBecomesTools(t *testing.T) {
	t.Parallel()
	ps := testkit.NewPetStore(t)
	api := load(t, &bridgev1.OpenApiTransport{SpecUrl: ps.SpecURL()})
	if api.Title != "Pet Store" || api.Version != "1.2.0" || api.OpenAPI != "3.1.0" || api.Base.String() != ps.URL+"/v1" {
		t.Errorf("api = %q %q %q at %v; want the document's info, and its relative server resolved against the document's URL", api.Title, api.Version, api.OpenAPI, api.Base)
	}
	var names []string
	for _, tool := range api.Tools {
		names = append(names, tool.GetName())
	}
	if got, want := strings.Join(names, " "), "listPets createPet getPet delete_pets_petId getPhoto"; got != want {
		t.Errorf("tools = %s\nwant %s", got, want)
	}
	skipped := strings.Join(api.Skipped, "\n")
	for _, want := range []string{
		`"adoptPet" (POST /pets/{petId}/adoption): a form body (application/x-www-form-urlencoded) is not supported; only JSON bodies are`,
		`"subscribe" (POST /subscriptions): callbacks are not supported`,
	} {
		if !strings.Contains(skipped, want) {
			t.Errorf("skipped = %s\nwant it to hold %s", skipped, want)
		}
	}
	tools := byName(api)

	list := tools["listPets"]
	if list.GetDescription() != "List the pets.\n\nPets in the order they were added, at most `limit` of them." || list.GetTitle() != "List the pets." {
		t.Errorf("listPets description %q title %q", list.GetDescription(), list.GetTitle())
	}
	in := schemaOf(t, list.GetInputSchema())
	props := in["properties"].(map[string]any)
	if in["type"] != "object" || in["additionalProperties"] != false || len(props) != 2 {
		t.Errorf("listPets input = %s", list.GetInputSchema())
	}
	if tag := props["tag"].(map[string]any); tag["type"] != "array" || tag["description"] != "Only pets with one of these tags." {
		t.Errorf("listPets tag = %v", tag)
	}
	if list.OutputSchema != nil {
		t.Errorf("listPets answers an array, which is no MCP output schema, yet has %s", list.GetOutputSchema())
	}

	get := schemaOf(t, tools["getPet"].GetInputSchema())
	if req := get["required"].([]any); len(req) != 1 || req[0] != "petId" {
		t.Errorf("getPet required = %v", get["required"])
	}
	out := schemaOf(t, tools["getPet"].GetOutputSchema())
	if out["type"] != "object" || out["properties"].(map[string]any)["friend"].(map[string]any)["$ref"] != "#/$defs/Pet" || out["$defs"].(map[string]any)["Pet"] == nil {
		t.Errorf("getPet output = %s; want the Pet object at the root, its recursion through $defs", tools["getPet"].GetOutputSchema())
	}

	create := schemaOf(t, tools["createPet"].GetInputSchema())
	if body := create["properties"].(map[string]any)["body"].(map[string]any); body["$ref"] != "#/$defs/NewPet" {
		t.Errorf("createPet body = %v", body)
	}
	if req := create["required"].([]any); len(req) != 1 || req[0] != "body" {
		t.Errorf("createPet required = %v", create["required"])
	}
	del := schemaOf(t, tools["delete_pets_petId"].GetInputSchema())
	if _, ok := del["properties"].(map[string]any)["X-Reason"]; !ok || tools["delete_pets_petId"].GetDescription() != "Remove a pet." {
		t.Errorf("the delete operation = %v", tools["delete_pets_petId"])
	}
}

// Include and exclude name operationIds or tags; exclude wins; a name
// that is neither is refused rather than mounting nothing.
func TestIncludeAndExcludeKeepTheOperationsTheyName(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name             string
		include, exclude []string
		want             string
	}{
		{"an operationId", []string{"getPet"}, nil, "getPet"},
		{"a tag", []string{"admin"}, nil, "delete_pets_petId"},
		{"a tag less an operationId", []string{"pets"}, []string{"getPhoto", "createPet"}, "listPets getPet"},
		{"an exclusion alone", nil, []string{"pets"}, "delete_pets_petId"},
	} {
		t.Run(c.name, func(t *testing.T) {
			api := load(t, &bridgev1.OpenApiTransport{Spec: testkit.PetStoreSpec(t), BaseUrl: "http://127.0.0.1:1/v1", Include: c.include, Exclude: c.exclude})
			var names []string
			for _, tool := range api.Tools {
				names = append(names, tool.GetName())
			}
			if got := strings.Join(names, " "); got != c.want {
				t.Errorf("tools = %q; want %q", got, c.want)
			}
		})
	}
	_, err := Load(context.Background(), &bridgev1.OpenApiTransport{Spec: testkit.PetStoreSpec(t), BaseUrl: "http://127.0.0.1:1", Include: []string{"getPets"}}, nil)
	if err == nil || err.Error() != `include "getPets" names no operationId or tag of the document` {
		t.Errorf("an include naming nothing: %v", err)
	}
	_, err = Load(context.Background(), &bridgev1.OpenApiTransport{Spec: testkit.PetStoreSpec(t), BaseUrl: "http://127.0.0.1:1", Include: []string{"adoptPet"}}, nil)
	if err == nil || !strings.Contains(err.Error(), "the document gives no tool: no operation the filters keep can be called: \"adoptPet\"") {
		t.Errorf("keeping only an operation the bridge cannot call: %v", err)
	}
}

// An OpenAPI 3.0 schema's dialect becomes JSON Schema's: nullable is a
// "null" type, boolean exclusive bounds are numbers, example is examples.
func TestAnOpenAPI30SchemaBecomesJSONSchema(t *testing.T) {
	t.Parallel()
	doc := `{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{"/n":{"get":{"operationId":"n",
		"parameters":[{"name":"n","in":"query","schema":{"type":"number","nullable":true,"minimum":0,"exclusiveMinimum":true,"example":3}}],
		"responses":{"200":{"description":"ok"}}}}}}`
	api := load(t, &bridgev1.OpenApiTransport{Spec: doc, BaseUrl: "https://api.example.com"})
	n := schemaOf(t, api.Tools[0].GetInputSchema())["properties"].(map[string]any)["n"].(map[string]any)
	if ty, _ := n["type"].([]any); len(ty) != 2 || ty[1] != "null" || n["exclusiveMinimum"] != 0.0 || n["minimum"] != nil || n["nullable"] != nil || n["examples"] == nil {
		t.Errorf("converted = %v", n)
	}
}

// Operation names are sanitised to the presented names' characters, cut
// to 64 with a hash, and kept apart when two come out alike.
func TestToolNamesAreSanitisedAndUnique(t *testing.T) {
	t.Parallel()
	taken := map[string]bool{}
	for _, c := range []struct {
		op   operation
		want string
	}{
		{operation{id: "pets.list v2"}, "pets_list_v2"},
		{operation{method: "GET", path: "/users/{id}/repos"}, "get_users_id_repos"},
		{operation{id: "pets_list_v2"}, "pets_list_v2_2"},
		{operation{id: "ünïcode"}, "n_code"},
		{operation{id: strings.Repeat("a", 70)}, strings.Repeat("a", 55) + "_"},
	} {
		got := uniqueName(toolName(&c.op), taken)
		if !strings.HasPrefix(got, c.want) || len(got) > maxName {
			t.Errorf("name of %+v = %q; want %q", c.op, got, c.want)
		}
	}
}

// A document that names no server is served at "/" of where it was read
// from, as OpenAPI says; given inline, it needs a base URL (refuse_test).
func TestADocumentWithNoServerIsServedWhereItWasRead(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/docs/openapi.json" {
			w.Write([]byte(doc("")))
			return
		}
		w.Write([]byte(`"` + r.URL.Path + `"`))
	}))
	t.Cleanup(srv.Close)
	api := load(t, &bridgev1.OpenApiTransport{SpecUrl: srv.URL + "/docs/openapi.json"})
	if api.Base.String() != srv.URL {
		t.Errorf("base = %v; want %s", api.Base, srv.URL)
	}
	if got := call(t, api, "a", `{}`); got.GetExitCode() != 0 || got.GetStdout() != `"/a"` {
		t.Errorf("capture = %v", got)
	}
}
