package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// An HTTP API mounted from its OpenAPI document through REST is a member
// of the workspace like any host: its operations are listed with their
// schemas and called through act, REST and MCP, each call the operation's
// request to the real API; an export of the workspace names why it has no
// server.json entry.
func TestAnOpenAPIMountIsListedAndCalledThroughActRESTAndMCP(t *testing.T) {
	t.Parallel()
	s := newSuite(t, options{})
	ps := testkit.NewPetStore(t)
	ops := as("ops", identity.Admin)
	mounted := do(t, s.Client, http.MethodPut, s.URL+"/v1/servers/petstore", ops,
		[]byte(`{"openapi":{"spec_url":"`+ps.SpecURL()+`","include":["pets"]}}`))
	if mounted.Status != http.StatusOK || !strings.Contains(string(mounted.Body), `"transport":"openapi"`) ||
		!strings.Contains(string(mounted.Body), `"tool_count":4`) || !strings.Contains(string(mounted.Body), `a form body (application/x-www-form-urlencoded) is not supported`) {
		t.Fatalf("PUT /v1/servers/petstore = %d %s", mounted.Status, mounted.Body)
	}
	s.join(t, "default", "petstore")

	// act: the clients listing carries each operation's schemas, and an
	// invoke then capture is the request.
	clients := do(t, s.Client, http.MethodPost, s.URL+"/v1/act", ops, []byte(`{"op":"clients","workspace":"default"}`))
	var listed struct {
		Rows []struct {
			Client string `json:"client"`
			Tools  []struct {
				Name         string          `json:"name"`
				InputSchema  json.RawMessage `json:"input_schema"`
				OutputSchema json.RawMessage `json:"output_schema"`
			} `json:"tools"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(clients.Body, &listed); err != nil || len(listed.Rows) != 1 || len(listed.Rows[0].Tools) != 4 {
		t.Fatalf("clients = %s (%v)", clients.Body, err)
	}
	for _, tool := range listed.Rows[0].Tools {
		if tool.Name == "getPet" && (!strings.Contains(string(tool.InputSchema), `"petId":{"description":"The pet's id.","type":"integer"}`) ||
			!strings.Contains(string(tool.OutputSchema), `"required":["id","name"]`)) {
			t.Errorf("getPet as listed: input %s output %s", tool.InputSchema, tool.OutputSchema)
		}
	}
	inv := do(t, s.Client, http.MethodPost, s.URL+"/v1/act", ops, []byte(`{"op":"invoke","client":"petstore","tool":"listPets","input":{"tag":["dog"]}}`))
	var routed struct{ Invocation string }
	if err := json.Unmarshal(inv.Body, &routed); err != nil || routed.Invocation == "" {
		t.Fatalf("invoke = %s", inv.Body)
	}
	got := do(t, s.Client, http.MethodPost, s.URL+"/v1/act", ops, []byte(`{"op":"capture","invocation":"`+routed.Invocation+`","wait":"10s"}`))
	if want := `"capture":{"stdout":"[{\"id\":1,\"name\":\"Rex\",\"tag\":\"dog\"}]\n","stderr":"","exit_code":0}`; !strings.Contains(string(got.Body), want) {
		t.Errorf("capture = %s\nwant %s", got.Body, want)
	}

	// REST: POST /v1/call, an error status as a failed capture.
	called := do(t, s.Client, http.MethodPost, s.URL+"/v1/call", ops, []byte(`{"client":"petstore","tool":"getPet","input":"{\"petId\":9}"}`))
	if want := `"exit_code":1`; called.Status != http.StatusOK || !strings.Contains(string(called.Body), want) ||
		!strings.Contains(string(called.Body), `/v1/pets/9 answered 404 Not Found\n{\"error\":\"no pet 9\"}`) {
		t.Errorf("POST /v1/call = %d %s", called.Status, called.Body)
	}

	// REST: the workspace exported as server.json entries names why the API
	// has none.
	exported := do(t, s.Client, http.MethodGet, s.URL+"/v1/servers:export?workspace=default", ops, nil)
	if exported.Status != http.StatusOK || !strings.Contains(string(exported.Body), `"client":"petstore"`) ||
		!strings.Contains(string(exported.Body), "an HTTP API mounted from its OpenAPI document is no MCP server") {
		t.Errorf("GET /v1/servers:export = %d %s", exported.Status, exported.Body)
	}

	// MCP: the presented tools with their schemas; a JSON object answer is
	// structured content too.
	cs := s.connect(t, "/mcp", as("alice", identity.Driver), nil)
	var names []string
	var create *mcp.Tool
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
		if tool.Name == "petstore_createPet" {
			create = tool
		}
	}
	if want := []string{"petstore_createPet", "petstore_getPet", "petstore_getPhoto", "petstore_listPets"}; !slices.Equal(names, want) {
		t.Fatalf("tools/list = %v, want %v", names, want)
	}
	if schema, _ := json.Marshal(create.InputSchema); !strings.Contains(string(schema), `"body":{"$ref":"#/$defs/NewPet"}`) {
		t.Errorf("petstore_createPet's input schema = %s", schema)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "petstore_createPet", Arguments: map[string]any{"body": map[string]any{"name": "Kit"}}})
	if err != nil {
		t.Fatal(err)
	}
	if structured, _ := json.Marshal(res.StructuredContent); res.IsError || string(structured) != `{"id":3,"name":"Kit"}` {
		t.Errorf("createPet over MCP = isError %v %q, structured %s", res.IsError, texts(res), structured)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "petstore_getPet", Arguments: map[string]any{"petId": "nine"}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(strings.Join(texts(res), ""), "its input does not match the tool's input schema") {
		t.Errorf("getPet with a bad id over MCP = isError %v %q", res.IsError, texts(res))
	}
}

// The console's form mounts an API from its document's URL and lists the
// operations it left out.
func TestTheConsoleMountsAnOpenAPIDocument(t *testing.T) {
	t.Parallel()
	s := newSuite(t, options{})
	ps := testkit.NewPetStore(t)
	mounted := s.consolePost(t, "/console/api/servers", opsHeader, url.Values{"kind": {"openapi"}, "client": {"pets"},
		"spec_url": {ps.SpecURL()}, "include": {"pets, admin"}, "workspace": {"default"}})
	mustStatus(t, "mount", mounted, http.StatusOK, `data-server="pets"`, "<dt>Transport</dt><dd>openapi</dd>", "<dt>Server</dt><dd>Pet Store</dd>",
		"tools left out (2)", `Done: mounted &#34;pets&#34; in workspace &#34;default&#34;.`)
	refused := s.consolePost(t, "/console/api/servers", opsHeader, url.Values{"kind": {"openapi"}, "client": {"bad"}, "spec_url": {ps.URL + "/v1/pets"}})
	mustStatus(t, "a URL that is no document", refused, http.StatusBadRequest, "the document")
}

// The console's bearer token is the bridge's to send: the API is sent it,
// and no page shows it.
func TestTheConsolesBearerTokenReachesTheAPIAndIsNeverShown(t *testing.T) {
	t.Parallel()
	s := newSuite(t, options{})
	const doc = `{"openapi":"3.1.0","info":{"title":"who","version":"1"},"paths":{"/whoami":{"get":{"operationId":"whoami","responses":{"200":{"description":"ok"}}}}}}`
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/openapi.json" {
			w.Write([]byte(doc))
			return
		}
		fmt.Fprintf(w, "%q", r.Header.Get("Authorization"))
	}))
	t.Cleanup(api.Close)
	mounted := s.consolePost(t, "/console/api/servers", opsHeader, url.Values{"kind": {"openapi"}, "client": {"who"},
		"spec_url": {api.URL + "/openapi.json"}, "base_url": {api.URL}, "bearer_token": {"s3cret"}})
	mustStatus(t, "mount", mounted, http.StatusOK, `data-server="who"`)
	called := do(t, s.Client, http.MethodPost, s.URL+"/v1/call", as("ops", identity.Admin), []byte(`{"client":"who","tool":"whoami","input":"{}"}`))
	if !strings.Contains(string(called.Body), `"stdout":"\"Bearer s3cret\""`) {
		t.Errorf("POST /v1/call = %d %s; want the API sent the bearer token", called.Status, called.Body)
	}
	for _, page := range []string{"/console/api/servers", "/v1/servers"} {
		if got := do(t, s.Client, http.MethodGet, s.URL+page, as("ops", identity.Admin), nil); got.Status != http.StatusOK || strings.Contains(string(got.Body), "s3cret") {
			t.Errorf("GET %s = %d, showing the token: %t", page, got.Status, strings.Contains(string(got.Body), "s3cret"))
		}
	}
	if strings.Contains(string(mounted.Body), "s3cret") {
		t.Error("the mount's answer shows the token")
	}
}
