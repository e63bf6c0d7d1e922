package compose

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-run/switchboard/kit/suite/certs"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/tests/internal/procs"
)

// docker-compose.yml comes up healthy on the engine, from the image
// Dockerfile.prebuilt made, and docs/deploy.md's tour works from this
// machine through the published ports with the admin's certificate copied
// out of the certs container: grpcurl on each gRPC port, curl on the
// gateway (health, an invoke and its capture from the example host), an MCP
// session calling the example host and the mounted everything server, and
// the console's page. Then `down -v` leaves nothing behind.
func TestEngineComposeTourThroughThePublishedPorts(t *testing.T) {
	p := newProject(t, "docker-compose.yml")
	t.Log("the observability profile is not started: Prometheus, Grafana and Jaeger are third-party images pulled from a registry, " +
		"and deploy/observability_test.go checks their configuration instead")
	t.Logf("docker-compose.yml: up and healthy in %v", p.up())
	admin := p.admin()
	gw := "https://localhost:" + p.http

	grpcurl := testkit.Tool(t, "grpcurl")
	for port, service := range map[string]string{"7731": "switchboard.registry.v1.RegistryService",
		"7732": "switchboard.mailbox.v1.MailboxService", "7733": "switchboard.bridge.v1.BridgeService"} {
		out := testkit.Run(t, grpcurl, "-cacert", admin.CA, "-cert", admin.Cert, "-key", admin.Key, "localhost:"+port, "list")
		if !strings.Contains(out, service) {
			t.Errorf("grpcurl localhost:%s list: %q does not list %s", port, out, service)
		}
	}

	if got := curl(t, admin, gw+"/healthz"); got != `{"ok":true,"bridge":"SERVING","mailbox":"SERVING","registry":"SERVING"}` {
		t.Errorf("GET /healthz: %s", got)
	}
	// The example host has no healthcheck (it listens on nothing): it is
	// ready once the registry shows it present, having advertised.
	hc := httpsClient(t, admin)
	testkit.Await(t, "example-host present", time.Minute, func() error {
		res, err := hc.Get(gw + "/v1/clients/example-host")
		if err != nil {
			return err
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK || !strings.Contains(string(body), `"present":true`) {
			return fmt.Errorf("GET /v1/clients/example-host: %d %s", res.StatusCode, body)
		}
		return nil
	})
	var inv struct{ Invocation string }
	out := curl(t, admin, gw+"/v1/act", "-d", `{"op":"invoke","client":"example-host","tool":"echo","input":{"message":"hi"}}`)
	if json.Unmarshal([]byte(out), &inv) != nil || inv.Invocation == "" {
		t.Fatalf("invoke through /v1/act: %s", out)
	}
	var got struct{ Capture struct{ Stdout string } }
	out = curl(t, admin, gw+"/v1/act", "-d", `{"op":"capture","invocation":"`+inv.Invocation+`","wait":"10s"}`)
	if json.Unmarshal([]byte(out), &got) != nil || got.Capture.Stdout != `{"message":"hi"}` {
		t.Errorf("capture through /v1/act: %s; want the example host's echo of {\"message\":\"hi\"}", out)
	}

	// An agent sees a workspace's tools; outside dev mode a client joins
	// one when an admin registers it there.
	for _, client := range []string{"example-host", "everything"} {
		curl(t, admin, "-X", "PUT", gw+"/v1/workspaces/default/clients/"+client)
	}
	cs := mcpSession(t, admin, gw+"/mcp")
	for name, want := range map[string]string{"example-host_echo": `{"message":"over MCP"}`,
		"everything_test_simple_text": "This is a simple text response for testing."} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{"message": "over MCP"}})
		if err != nil {
			t.Errorf("MCP tools/call %s: %v", name, err)
		} else if res.IsError || procs.Texts(res) != want {
			t.Errorf("MCP tools/call %s: %q (error: %v); want %q", name, procs.Texts(res), res.IsError, want)
		}
	}

	res, err := hc.Get(gw + "/console/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(page), "<title>Switchboard console</title>") {
		t.Errorf("GET /console/: %s, %d bytes without the console's title", res.Status, len(page))
	}
}

// curl runs curl with the admin's certificate and returns its output.
func curl(t *testing.T, admin certs.Files, args ...string) string {
	t.Helper()
	return strings.TrimSpace(testkit.Run(t, "curl", append([]string{"-sS", "--fail-with-body",
		"--cacert", admin.CA, "--cert", admin.Cert, "--key", admin.Key}, args...)...))
}

// httpsClient presents leaf to the gateway.
func httpsClient(t *testing.T, leaf certs.Files) *http.Client {
	return &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: testkit.Client(t, leaf)}}
}

// mcpSession opens an MCP session on the endpoint at url as leaf.
func mcpSession(t *testing.T, leaf certs.Files, url string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "switchboard-compose-test", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: httpsClient(t, leaf)}, nil)
	if err != nil {
		t.Fatalf("an MCP session on %s: %v", url, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}
