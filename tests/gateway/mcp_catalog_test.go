package gateway_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/tests/internal/procs"
)

const bigResourcePkg = procs.Module + "services/bridge/internal/catalog/testdata/bigresource"

// resourceURIs lists cs's resources by URI, with their _meta's client.
func resourceURIs(t testing.TB, cs *mcp.ClientSession) map[string]string {
	t.Helper()
	out := map[string]string{}
	for r, err := range cs.Resources(context.Background(), nil) {
		if err != nil {
			t.Fatalf("resources/list: %v", err)
		}
		client, _ := r.Meta["run.switchboard/client"].(string)
		out[r.URI] = client
	}
	return out
}

func promptNames(t testing.TB, cs *mcp.ClientSession) map[string]*mcp.Prompt {
	t.Helper()
	out := map[string]*mcp.Prompt{}
	for p, err := range cs.Prompts(context.Background(), nil) {
		if err != nil {
			t.Fatalf("prompts/list: %v", err)
		}
		out[p.Name] = p
	}
	return out
}

// refusedWith checks a JSON-RPC error's sentence.
func refusedWith(t testing.TB, err error, msg string) {
	t.Helper()
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Message != msg {
		t.Fatalf("error = %v; want the JSON-RPC error %q", err, msg)
	}
}

func TestResourcesAndPromptsOfAMountedServerThroughTheEndpoint(t *testing.T) {
	t.Parallel()
	s := newSuite(t, options{})
	// A server mounted on the bridge whose client is no member of the
	// workspace: the endpoint serves nothing of it.
	stray := &bridgev1.ServerConfig{Transport: &bridgev1.ServerConfig_Stdio{Stdio: &bridgev1.StdioTransport{Command: testkit.Build(t, bigResourcePkg)}}}
	if _, err := s.bridge.Mount(opsCtx, &bridgev1.MountRequest{Client: "stray", Config: stray}); err != nil {
		t.Fatal(err)
	}
	s.mountConformance(t)
	s.setGroup(t, &registryv1.Group{Workspace: "default", Name: "conf", Patterns: []string{"conf_test_simple_text"}})
	s.setGroup(t, &registryv1.Group{Workspace: "default", Name: "nobody", Patterns: []string{"zzz_*"}})
	forEachRevision(t, func(t *testing.T, rev string) {
		ctx := context.Background()
		cs := s.connectAt(t, rev, "/mcp", as("alice", identity.Driver), nil)
		caps := cs.InitializeResult().Capabilities
		if caps.Resources == nil || !caps.Resources.ListChanged || caps.Prompts == nil || !caps.Prompts.ListChanged {
			t.Fatalf("capabilities %+v; want resources and prompts with listChanged", caps)
		}
		testkit.Eventually(t, "conf's resources listed", 20*time.Second, func() bool {
			return resourceURIs(t, cs)["test://static-text"] == "conf"
		})
		if uris := resourceURIs(t, cs); len(uris) != 3 {
			t.Fatalf("resources/list = %v; want conf's three and nothing of stray, which is no member", uris)
		}
		if promptNames(t, cs)["stray_big"] != nil {
			t.Fatal("prompts/list holds stray_big; stray is no member of the workspace")
		}
		var templates []string
		for tpl, err := range cs.ResourceTemplates(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			templates = append(templates, tpl.URITemplate)
		}
		if strings.Join(templates, " ") != "test://template/{id}/data" {
			t.Fatalf("resources/templates/list = %v", templates)
		}
		read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://static-text"})
		if err != nil || len(read.Contents) != 1 || read.Contents[0].Text != "This is the content of the static text resource." {
			t.Fatalf("resources/read static-text = %+v, %v", read, err)
		}
		read, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://template/7/data"})
		if err != nil || !strings.Contains(read.Contents[0].Text, `"id": "7"`) || read.Contents[0].MIMEType != "application/json" {
			t.Fatalf("resources/read of the template = %+v, %v", read, err)
		}
		read, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://static-binary"})
		if err != nil || len(read.Contents[0].Blob) == 0 {
			t.Fatalf("resources/read static-binary = %+v, %v", read, err)
		}

		prompts := promptNames(t, cs)
		p := prompts["conf_test_prompt_with_arguments"]
		if p == nil || len(p.Arguments) != 2 || p.Meta["run.switchboard/prompt"] != "test_prompt_with_arguments" || p.Meta["run.switchboard/client"] != "conf" {
			t.Fatalf("prompts/list = %v; want conf_test_prompt_with_arguments with its arguments and _meta", prompts)
		}
		got, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "conf_test_prompt_with_arguments", Arguments: map[string]string{"arg1": "red", "arg2": "blue"}})
		if err != nil || len(got.Messages) != 1 || got.Messages[0].Content.(*mcp.TextContent).Text != "Prompt with arguments: arg1='red', arg2='blue'" {
			t.Fatalf("prompts/get = %+v, %v", got, err)
		}
		got, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "conf_test_prompt_with_embedded_resource", Arguments: map[string]string{"resourceUri": "test://x"}})
		if err != nil || len(got.Messages) != 2 || got.Messages[0].Content.(*mcp.EmbeddedResource).Resource.URI != "test://x" {
			t.Fatalf("prompts/get of the embedded resource = %+v, %v", got, err)
		}

		_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://nope"})
		refusedWith(t, err, `no resource "test://nope" is served in workspace "default" right now; list resources/list and resources/templates/list for the URIs in force`)
		_, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "ghost_test_simple_prompt"})
		refusedWith(t, err, `no prompt is presented as "ghost_test_simple_prompt" in workspace "default" right now; list prompts/list for the names in force`)

		// A group serves the catalog of the clients it presents a tool of.
		conf := s.connectAt(t, rev, "/mcp/default/conf", as("alice", identity.Driver), nil)
		if promptNames(t, conf)["conf_test_simple_prompt"] == nil || resourceURIs(t, conf)["test://static-text"] != "conf" {
			t.Fatal("group conf, which presents a tool of conf, does not serve conf's prompts and resources")
		}
		nobody := s.connectAt(t, rev, "/mcp/default/nobody", as("alice", identity.Driver), nil)
		if n := len(promptNames(t, nobody)) + len(resourceURIs(t, nobody)); n != 0 {
			t.Fatalf("group nobody, which presents no tool, serves %d prompts and resources", n)
		}
		_, err = nobody.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://static-text"})
		refusedWith(t, err, `no resource "test://static-text" is served in workspace "default" (group "nobody") right now; list resources/list and resources/templates/list for the URIs in force`)
	})
}

// TestResourceListChangedReachesTheClient mounts and unmounts a second
// server while a client of each era listens; each era in turn, since both
// watch the one workspace.
func TestResourceListChangedReachesTheClient(t *testing.T) {
	t.Parallel()
	s := newSuite(t, options{})
	s.mountConformance(t)
	s.join(t, "default", "big")
	big := testkit.Build(t, bigResourcePkg)
	for _, rev := range revisions {
		t.Run("protocol "+rev, func(t *testing.T) {
			changed := make(chan struct{}, 16)
			cs := s.connectAt(t, rev, "/mcp", as("alice", identity.Driver), &mcp.ClientOptions{
				ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { changed <- struct{}{} }})
			testkit.Eventually(t, "conf's resources listed", 20*time.Second, func() bool {
				return resourceURIs(t, cs)["test://static-text"] == "conf"
			})
			await := func(what string, cond func(map[string]string) bool) {
				t.Helper()
				deadline := time.After(30 * time.Second)
				for {
					select {
					case <-changed:
					case <-deadline:
						t.Fatalf("no notifications/resources/list_changed brought %s", what)
					}
					if cond(resourceURIs(t, cs)) {
						return
					}
				}
			}
			cfg := &bridgev1.ServerConfig{Transport: &bridgev1.ServerConfig_Stdio{Stdio: &bridgev1.StdioTransport{Command: big}}}
			if _, err := s.bridge.Mount(opsCtx, &bridgev1.MountRequest{Client: "big", Config: cfg}); err != nil {
				t.Fatal(err)
			}
			await("big's resources", func(uris map[string]string) bool { return uris["big://text"] == "big" })
			// A large resource reaches the client cut, with the marker.
			read, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "big://text"})
			if err != nil || !strings.HasSuffix(read.Contents[0].Text, "[truncated by Switchboard: 524288 more bytes not shown; the bridge passes at most 1048576 bytes of text per answer]") {
				t.Fatalf("resources/read big://text: %v", err)
			}
			if _, err := s.bridge.Unmount(opsCtx, &bridgev1.UnmountRequest{Client: "big"}); err != nil {
				t.Fatal(err)
			}
			await("big's resources gone", func(uris map[string]string) bool { _, ok := uris["big://text"]; return !ok })
		})
	}
}

// The bridge's catalog routes over REST, as a driver.
func TestTheCatalogOverREST(t *testing.T) {
	t.Parallel()
	s := newSuite(t, options{})
	s.mountConformance(t)
	alice := as("alice", identity.Driver)
	cases := []struct {
		name, method, path, body string
		status                   int
		want                     string
	}{
		{"resources", http.MethodGet, "/v1/servers/conf/resources", "", 200, `"uri":"test://static-text","name":"static-text","definition":"{`},
		{"templates", http.MethodGet, "/v1/servers/conf/resource-templates", "", 200, `"uri_template":"test://template/{id}/data"`},
		{"a read", http.MethodGet, "/v1/servers/conf/resource?uri=" + url.QueryEscape("test://static-text"), "", 200,
			`{"contents":[{"uri":"test://static-text","mime_type":"text/plain","text":"This is the content of the static text resource.","truncated":false,"meta":""}]}`},
		{"prompts", http.MethodGet, "/v1/servers/conf/prompts", "", 200, `"name":"test_prompt_with_arguments"`},
		{"a prompt", http.MethodPost, "/v1/servers/conf/prompts/test_prompt_with_arguments", `{"arg1":"x","arg2":"y"}`, 200,
			`Prompt with arguments: arg1='x', arg2='y'`},
		{"an unknown client", http.MethodGet, "/v1/servers/ghost/resources", "", 404, `no MCP server is mounted as \"ghost\"`},
		{"an unknown URI", http.MethodGet, "/v1/servers/conf/resource?uri=test://nope", "", 404,
			`MCP server \"conf\" lists no resource \"test://nope\", and none of its resource templates matches it: only what a server lists is read`},
		{"a file the server does not list", http.MethodGet, "/v1/servers/conf/resource?uri=" + url.QueryEscape("file:///etc/passwd"), "", 404,
			`MCP server \"conf\" lists no resource \"file:///etc/passwd\"`},
		{"an unknown prompt", http.MethodPost, "/v1/servers/conf/prompts/nope", `{}`, 404, `MCP server \"conf\" lists no prompt \"nope\"`},
		{"completions", http.MethodPost, "/v1/servers/conf/completions", `{"prompt":"test_prompt_with_arguments","argument":"arg1","value":"x"}`, 200,
			`{"values":[],"total":0,"has_more":false}`},
		{"completions of an unlisted template", http.MethodPost, "/v1/servers/conf/completions", `{"uri_template":"file:///{p}","argument":"p"}`, 404,
			`MCP server \"conf\" lists no resource template \"file:///{p}\"`},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			var body []byte
			if tt.body != "" {
				body = []byte(tt.body)
			}
			r := do(t, s.Client, tt.method, s.URL+tt.path, alice, body)
			if r.Status != tt.status || !strings.Contains(string(r.Body), tt.want) {
				t.Fatalf("%s %s: HTTP %d %s; want %d with %s", tt.method, tt.path, r.Status, r.Body, tt.status, tt.want)
			}
		})
	}
}

// TestTheCatalogOfAnotherWorkspaceIsAbsent: conf sits in workspace default
// only. A token of workspace a is told over REST what it would be told
// once nothing is mounted as conf, GET /v1/servers leaves conf out, and
// the MCP endpoint of a serves nothing of it; a token of default and an
// admin are served.
func TestTheCatalogOfAnotherWorkspaceIsAbsent(t *testing.T) {
	t.Parallel()
	s := newSuite(t, options{})
	s.mountConformance(t)
	inA := bearer(s.mintToken(t, &registryv1.CreateTokenRequest{Identity: "alice", Workspaces: []string{"a"}}))
	inDefault := bearer(s.mintToken(t, &registryv1.CreateTokenRequest{Identity: "bob", Workspaces: []string{"default"}}))
	admin := as("ops", identity.Admin)
	routes := []struct{ method, path, body string }{
		{http.MethodGet, "/v1/servers/conf/resources", ""},
		{http.MethodGet, "/v1/servers/conf/resource-templates", ""},
		{http.MethodGet, "/v1/servers/conf/resource?uri=" + url.QueryEscape("test://static-text"), ""},
		{http.MethodGet, "/v1/servers/conf/prompts", ""},
		{http.MethodPost, "/v1/servers/conf/prompts/test_simple_prompt", "{}"},
	}
	send := func(h http.Header, method, path, body string) reply {
		var b []byte
		if body != "" {
			b = []byte(body)
		}
		return do(t, s.Client, method, s.URL+path, h, b)
	}
	refused := map[string]reply{}
	for _, r := range routes {
		got := send(inA, r.method, r.path, r.body)
		if got.Status != http.StatusNotFound {
			t.Fatalf("%s %s with a token of a: HTTP %d %s; want 404", r.method, r.path, got.Status, got.Body)
		}
		refused[r.path] = got
		for who, h := range map[string]http.Header{"a token of default": inDefault, "an admin": admin} {
			if got := send(h, r.method, r.path, r.body); got.Status != http.StatusOK {
				t.Fatalf("%s %s as %s: HTTP %d %s", r.method, r.path, who, got.Status, got.Body)
			}
		}
	}
	if got := send(inA, http.MethodGet, "/v1/servers", ""); got.Status != http.StatusOK || strings.Contains(string(got.Body), `"conf"`) {
		t.Fatalf("GET /v1/servers with a token of a: HTTP %d %s; want conf left out", got.Status, got.Body)
	}
	if got := send(inDefault, http.MethodGet, "/v1/servers", ""); got.Status != http.StatusOK || !strings.Contains(string(got.Body), `"client":"conf"`) {
		t.Fatalf("GET /v1/servers with a token of default: HTTP %d %s; want conf", got.Status, got.Body)
	}

	cs := s.connect(t, "/mcp/a", inA, nil)
	if n := len(resourceURIs(t, cs)) + len(promptNames(t, cs)); n != 0 {
		t.Fatalf("the endpoint of a serves %d resources and prompts; conf is no member of a", n)
	}
	_, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "test://static-text"})
	refusedWith(t, err, `no resource "test://static-text" is served in workspace "a" right now; list resources/list and resources/templates/list for the URIs in force`)

	// Unmounted, conf is refused to an admin in the same bytes.
	if _, err := s.bridge.Unmount(opsCtx, &bridgev1.UnmountRequest{Client: "conf"}); err != nil {
		t.Fatal(err)
	}
	for _, r := range routes {
		got := send(admin, r.method, r.path, r.body)
		if got.Status != refused[r.path].Status || string(got.Body) != string(refused[r.path].Body) {
			t.Fatalf("%s %s: unmounted, HTTP %d %s; outside the workspaces, HTTP %d %s",
				r.method, r.path, got.Status, got.Body, refused[r.path].Status, refused[r.path].Body)
		}
	}
}
