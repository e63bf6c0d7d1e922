package gateway

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"go.yaml.in/yaml/v3"

	"github.com/switchboard-run/switchboard/gen"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/gateway/internal/console"
	"github.com/switchboard-run/switchboard/services/gateway/internal/oauth"
)

// /openapi.json is an OpenAPI 3.1 document that kin-openapi's validator
// takes, and it describes every route: each rule of proto/http_routes.yaml,
// each pattern of the gateway's own mux, each of the console's. The
// Swagger 2.0 document stays at /openapi.v2.json.
func TestTheServedOpenAPIDocumentValidatesAndListsEveryRoute(t *testing.T) {
	t.Parallel()
	nowhere := testkit.Dial(t, testkit.FreeAddr(t)) // the documents need no backend
	g := devGateway(t, nowhere, nowhere, nowhere)
	res := get(g, "/openapi.json")
	if res.Code != http.StatusOK || !bytes.Equal(res.Body.Bytes(), gen.OpenAPI) || res.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("GET /openapi.json: %d %s", res.Code, res.Header())
	}
	if v2 := get(g, "/openapi.v2.json"); v2.Code != http.StatusOK || !bytes.Contains(v2.Body.Bytes(), []byte(`"swagger": "2.0"`)) {
		t.Errorf("GET /openapi.v2.json: %d", v2.Code)
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(res.Body.Bytes())
	if err != nil {
		t.Fatalf("the document does not load: %v", err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi = %q", doc.OpenAPI)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("the document does not validate: %v", err)
	}
	has := func(method, path string) bool {
		item := doc.Paths.Value(path)
		return item != nil && (method == "" || item.GetOperation(method) != nil)
	}

	var routes struct {
		HTTP struct {
			Rules []map[string]string `yaml:"rules"`
		} `yaml:"http"`
	}
	data, err := os.ReadFile(filepath.Join(testkit.RepoRoot(t), "proto", "http_routes.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &routes); err != nil {
		t.Fatal(err)
	}
	// A parameter bound to a field of a field ({group.workspace}) is named
	// by its last part in the document, where it shares its path.
	undot := regexp.MustCompile(`\{(?:[A-Za-z0-9_]+\.)+([A-Za-z0-9_]+)\}`)
	for _, r := range routes.HTTP.Rules {
		for _, m := range []string{"get", "put", "post", "delete", "patch"} {
			if path, ok := r[m]; ok && !has(strings.ToUpper(m), undot.ReplaceAllString(path, "{$1}")) {
				t.Errorf("%s %s (%s) is not in the document", strings.ToUpper(m), path, r["selector"])
			}
		}
	}
	if len(g.patterns) < 8 {
		t.Fatalf("the gateway's patterns = %v", g.patterns)
	}
	own := append([]string{oauth.MetadataPrefix, oauth.MetadataPrefix + "/mcp", oauth.MetadataPrefix + "/mcp/{workspace}", oauth.MetadataPrefix + "/mcp/{workspace}/{group}"}, g.patterns...)
	for _, p := range own {
		if p != "/" && p != console.Prefix && !has("", p) {
			t.Errorf("the gateway's route %s is not in the document", p)
		}
	}
	for _, p := range console.Patterns() {
		method, path, _ := strings.Cut(p, " ")
		path = strings.TrimSuffix(path, "{$}")
		if strings.HasSuffix(path, "/static/") {
			path += "{file}"
		}
		if !has(method, path) {
			t.Errorf("the console's route %s is not in the document (as %s %s)", p, method, path)
		}
	}
}
