package app_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/process"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// TestConnectors runs `switchboard dev` and mounts what users arrive with:
// an HTTP API from its OpenAPI document (a file, with its base URL), and
// MCP Registry entries (a remote, served here by the conformance server
// over Streamable HTTP; npm and PyPI packages, printed as the commands they
// would run), then exports the workspace's mounts as server.json.
func TestConnectors(t *testing.T) {
	t.Parallel()
	bin := testkit.Build(t, module+"cli/cmd/switchboard")
	httpAddr := testkit.FreeAddr(t)
	d := &devSuite{t: t, bin: bin, grpcAddr: testkit.FreeAddr(t), data: filepath.Join(t.TempDir(), "data")}
	d.secretFile = filepath.Join(d.data, process.DevSecretFile)
	testkit.Start(t, bin, "dev", "--grpc", d.grpcAddr, "--http", httpAddr, "--data", d.data)
	testkit.WaitHealthy(t, d.grpcAddr, mailboxv1.MailboxService_ServiceDesc.ServiceName, 20*time.Second)
	grpcAddr := d.grpcAddr
	addr := "--addr=" + grpcAddr
	ps := testkit.NewPetStore(t, "--api-key", "k-123")
	root := testkit.RepoRoot(t)

	out, stderr, code := d.run("openapi", "mount", "pets", addr, "--spec", filepath.Join(root, "examples", "petstore", "openapi.yaml"),
		"--base-url", ps.URL+"/v1", "--exclude", "admin", "--api-key", "k-123")
	if code != 0 || !regexp.MustCompile(`pets\s+openapi\s+running\s+4\s`).MatchString(out) ||
		!strings.Contains(out, `"adoptPet" (POST /pets/{petId}/adoption): a form body`) {
		t.Fatalf("openapi mount: exit %d\n%s%s", code, out, stderr)
	}
	if out, stderr, code := d.run("call", addr, "pets_listPets", `{"tag":["cat"]}`); code != 0 || out != `[{"id":2,"name":"Tom","tag":"cat"}]`+"\n" {
		t.Errorf("call pets_listPets: exit %d %q %q", code, out, stderr)
	}
	if _, stderr, code := d.run("openapi", "mount", "bad", addr, "--spec", filepath.Join(root, "docker-compose.yml")); code != 1 ||
		!strings.Contains(stderr, `mount "bad": the document has no "openapi" field naming its version`) {
		t.Errorf("a file that is no document: exit %d %q", code, stderr)
	}

	// The suite's own REST API, from the document its gateway serves, as
	// docs/connectors.md shows it.
	testkit.WaitListening(t, httpAddr, 20*time.Second)
	token, stderr, code := d.run("tokens", "create", addr, "--identity", "self", "--workspaces", "default")
	if code != 0 {
		t.Fatalf("tokens create: exit %d %q", code, stderr)
	}
	if out, stderr, code := d.run("openapi", "mount", "self", addr, "--spec", "http://"+httpAddr+"/openapi.json", "--include", "RegistryService",
		"--bearer-token", strings.TrimSpace(token)); code != 0 || !regexp.MustCompile(`self\s+openapi\s+running\s`).MatchString(out) {
		t.Fatalf("openapi mount self: exit %d\n%s%s", code, out, stderr)
	}
	if out, stderr, code := d.run("call", addr, "self_RegistryService_ListClients", `{"workspace":"default"}`); code != 0 || !strings.Contains(out, `"client":"pets"`) {
		t.Errorf("call self_RegistryService_ListClients: exit %d %q %q", code, out, stderr)
	}

	conf := testkit.FreeAddr(t)
	testkit.StartHTTP(t, testkit.Tool(t, "everything-server"), conf)
	dir := t.TempDir()
	entry := `{"name": "io.example/conformance", "description": "The SDK's conformance server", "version": "1.0.0",
	  "remotes": [{"type": "streamable-http", "url": "http://` + conf + `/{path}",
	    "variables": {"path": {"default": "mcp"}},
	    "headers": [{"name": "X-Token", "isRequired": true, "isSecret": true}]}]}`
	if err := os.WriteFile(filepath.Join(dir, "conformance.json"), []byte(entry), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := d.run("mcp", "import", addr, dir); code != 1 ||
		stderr != "switchboard mcp import: nothing was mounted: server \"io.example/conformance\" needs the secret header \"X-Token\": set it with --set X-Token=…\n" {
		t.Errorf("an import without its required header: exit %d %q", code, stderr)
	}
	out, stderr, code = d.run("mcp", "import", addr, dir, "--set", "X-Token=s3cret")
	if code != 0 || !strings.Contains(out, "conformance: remote http://"+conf+"/mcp (X-Token: ***)") ||
		!regexp.MustCompile(`conformance\s+http\s+running`).MatchString(out) || strings.Contains(out+stderr, "s3cret") {
		t.Fatalf("mcp import: exit %d\n%s%s", code, out, stderr)
	}
	if out, _, code := d.run("call", addr, "conformance_test_simple_text", `{}`); code != 0 || !strings.Contains(out, "simple text response") {
		t.Errorf("a call of the imported server: exit %d %q", code, out)
	}
	fixtures := filepath.Join(root, "services", "bridge", "serverjson", "testdata")
	if out, stderr, code := d.run("mcp", "import", filepath.Join(fixtures, "npm.json"), "--dry-run", "--set", "FILES_TOKEN=s3cret", "--set", "root=/srv"); code != 0 ||
		out != "files: FILES_CACHE=/tmp/files-cache FILES_TOKEN=*** npx -y @example/mcp-files@1.4.2 --log-level info /srv\n" {
		t.Errorf("import npm.json --dry-run: exit %d %q %q", code, out, stderr)
	}
	if out, _, code := d.run("mcp", "import", filepath.Join(fixtures, "pypi.json"), "--dry-run"); code != 0 || out != "time: uvx mcp-server-time==0.6.2 --local-timezone UTC\n" {
		t.Errorf("import pypi.json --dry-run: exit %d %q", code, out)
	}
	files := httptest.NewServer(http.FileServer(http.Dir(fixtures)))
	t.Cleanup(files.Close)
	if out, stderr, code := d.run("mcp", "import", files.URL+"/pypi.json", "--dry-run"); code != 0 || out != "time: uvx mcp-server-time==0.6.2 --local-timezone UTC\n" {
		t.Errorf("import of a URL --dry-run: exit %d %q %q", code, out, stderr)
	}
	if _, stderr, code := d.run("mcp", "import", files.URL+"/gone.json", "--dry-run"); code != 1 ||
		!strings.Contains(stderr, "reading "+files.URL+"/gone.json: the server answered 404 Not Found") {
		t.Errorf("import of a URL that answers 404: exit %d %q", code, stderr)
	}
	if _, stderr, code := d.run("mcp", "import", filepath.Join(fixtures, "pypi.json"), "--dry-run", "--set", "tz=UTC", "--set", "colour=red"); code != 1 ||
		!strings.Contains(stderr, "--set colour names nothing the entries ask for") {
		t.Errorf("a value nobody asks for: exit %d %q", code, stderr)
	}

	out, stderr, code = d.run("mcp", "export", addr, "--workspace", "default")
	if code != 0 || !strings.Contains(out, `"name": "local.switchboard/conformance"`) || !strings.Contains(out, `"url": "http://`+conf+`/mcp"`) ||
		strings.Contains(out, "s3cret") || !strings.Contains(stderr, "pets has no entry: an HTTP API mounted from its OpenAPI document is no MCP server") {
		t.Errorf("mcp export: exit %d\n%s%s", code, out, stderr)
	}
}
