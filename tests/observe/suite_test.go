// Package observe checks what an operator sees of a running suite
// (docs/observability.md): the counters and histograms at /metrics move
// by exactly what was done, and one call is one trace across every hop.
package observe

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-run/switchboard/cli/dev"
	"github.com/switchboard-run/switchboard/kit/lib/logging"
	"github.com/switchboard-run/switchboard/kit/suite/telemetry"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/mailbox"
	"github.com/switchboard-run/switchboard/tests/internal/procs"
)

// tools are the local host's: one that succeeds, one that fails, one that
// runs until cancelled, and one that prints the trace context it was given.
const tools = `[
 {"name":"ok","description":"","input_schema":{"type":"object"},"command":["cat"]},
 {"name":"fail","description":"","input_schema":{"type":"object"},"command":["sh","-c","exit 3"]},
 {"name":"slow","description":"","input_schema":{"type":"object"},"command":["sleep","60"]},
 {"name":"traceparent","description":"","input_schema":{"type":"object"},"command":["sh","-c","printf %s \"$TRACEPARENT\""]}
]`

// suite is `switchboard dev` in process with the local host "box" and the
// conformance everything-server mounted as "every".
type suite struct {
	base string
	tel  *telemetry.Telemetry
}

func newSuite(t *testing.T, tel *telemetry.Telemetry) *suite {
	t.Helper()
	dir := t.TempDir()
	toolsFile := filepath.Join(dir, "tools.json")
	mcpFile := filepath.Join(dir, "mcp.json")
	for f, body := range map[string]string{
		toolsFile: tools,
		mcpFile:   `{"mcpServers":{"every":{"command":"` + testkit.Tool(t, "everything-server") + `"}}}`,
	} {
		if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, httpAddr := procs.RunDev(t, dev.Options{DataDir: filepath.Join(dir, "data"),
		ToolsFile: toolsFile, ToolsClient: "box", MCPConfig: mcpFile, Log: logging.Discard(), Telemetry: tel, Secret: devSecret,
		Mailbox: mailbox.Bounds{TTL: time.Hour, MaxQueued: 1000, MaxSlots: 10_000, MaxCaptureBytes: 4 << 20}})
	s := &suite{base: "http://" + httpAddr, tel: tel}
	testkit.Eventually(t, "the local host present", 20*time.Second, func() bool {
		code, body := s.send(t, http.MethodPost, "/v1/act", driver, `{"op":"clients","workspace":"default"}`)
		return code == http.StatusOK && bytes.Contains([]byte(body), []byte(`"client":"box","present":true`))
	})
	return s
}

// devSecret is every suite's secret here, which each request carries.
const devSecret = "observe-test-secret"

var (
	driver = http.Header{"Switchboard-Identity": {"agent"}, "Switchboard-Dev-Secret": {devSecret}}
	admin  = http.Header{"Switchboard-Identity": {"ops"}, "Switchboard-Grade": {"admin"}, "Switchboard-Dev-Secret": {devSecret}}
)

// send makes one request of the gateway.
func (s *suite) send(t *testing.T, method, path string, h http.Header, body string) (int, string) {
	t.Helper()
	return testkit.Request(t, method, s.base+path, h, body)
}

// scrape reads the gateway's /metrics, which in dev mode are every
// service's.
func (s *suite) scrape(t *testing.T) testkit.Metrics {
	t.Helper()
	return testkit.Scrape(t, s.base+"/metrics", nil, nil)
}

// mcpSession connects to the workspace endpoint as the driver.
func (s *suite) mcpSession(t *testing.T) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "observe-test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.base + "/mcp/default",
		HTTPClient: testkit.HeaderClient(driver)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

var handleRE = regexp.MustCompile(`inv-[0-9a-f]{32}`)

// call invokes tool on client through /v1/act with the headers h, collects
// the capture (waiting for it) and returns its stdout.
func (s *suite) call(t *testing.T, client, tool string, h http.Header) string {
	t.Helper()
	code, body := s.send(t, http.MethodPost, "/v1/act", h, `{"op":"invoke","client":"`+client+`","tool":"`+tool+`","input":{}}`)
	id := handleRE.FindString(body)
	if code != http.StatusOK || id == "" {
		t.Fatalf("invoke %s_%s: %d %s", client, tool, code, body)
	}
	for {
		code, body = s.send(t, http.MethodPost, "/v1/act", driver, `{"op":"capture","invocation":"`+id+`","wait":"10s"}`)
		var res struct {
			Capture *struct{ Stdout string }
		}
		if err := json.Unmarshal([]byte(body), &res); code != http.StatusOK || err != nil {
			t.Fatalf("capture %s_%s: %d %s", client, tool, code, body)
		}
		if res.Capture != nil {
			return res.Capture.Stdout
		}
	}
}
