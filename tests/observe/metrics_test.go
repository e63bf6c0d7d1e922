package observe

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-run/switchboard/deploy"
	"github.com/switchboard-run/switchboard/kit/suite/telemetry"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// The counters and histograms move by exactly what was done: a success, a
// tool failure, a refusal, a cancel, a server that crashes, an MCP call.
func TestMetricsMoveByWhatWasDone(t *testing.T) {
	t.Parallel()
	s := newSuite(t, telemetry.NewMetrics())
	cs := s.mcpSession(t) // before the first scrape: its initialize is not what is measured
	before := s.scrape(t)

	s.call(t, "box", "ok", driver)
	s.call(t, "box", "fail", driver)
	if code, body := s.send(t, http.MethodPost, "/v1/act", driver, `{"op":"invoke","client":"box","tool":"missing","input":{}}`); code != http.StatusNotFound {
		t.Fatalf("invoking a missing tool: %d %s", code, body)
	}
	code, body := s.send(t, http.MethodPost, "/v1/invocations", driver, `{"client":"box","tool":"slow","input":"{}"}`)
	id := handleRE.FindString(body)
	if code != http.StatusOK || id == "" {
		t.Fatalf("invoke slow: %d %s", code, body)
	}
	if code, body := s.send(t, http.MethodPost, "/v1/invocations/"+id+":cancel", driver, `{"reason":"enough"}`); code != http.StatusOK {
		t.Fatalf("cancel: %d %s", code, body)
	}
	// One left running, so a queue is deep when the metrics are read;
	// cancelled at the end, so the suite's stop need not wait for it.
	code, body = s.send(t, http.MethodPost, "/v1/invocations", driver, `{"client":"box","tool":"slow","input":"{}"}`)
	running := handleRE.FindString(body)
	if code != http.StatusOK || running == "" {
		t.Fatalf("invoke slow: %d %s", code, body)
	}
	defer s.send(t, http.MethodPost, "/v1/invocations/"+running+":cancel", driver, `{}`)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "every_test_simple_text", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("tools/call through the endpoint: %v %v", res, err)
	}
	if code, body := s.send(t, http.MethodPut, "/v1/servers/broken", admin, `{"stdio":{"command":"/bin/false"},"crash_limit":2}`); code >= 500 {
		t.Fatalf("mounting the broken server: %d %s", code, body)
	}
	var after testkit.Metrics
	testkit.Eventually(t, "the broken server failed", 30*time.Second, func() bool {
		after = s.scrape(t)
		return after.Value("switchboard_bridge_servers", "state", "failed") == 1
	})

	delta := func(name string, labels ...string) float64 {
		return after.Value(name, labels...) - before.Value(name, labels...)
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"switchboard_invocations_total", []string{"workspace", "default", "client", "box", "outcome", "completed"}, 1},
		{"switchboard_invocations_total", []string{"workspace", "default", "client", "box", "outcome", "failed"}, 1},
		{"switchboard_invocations_total", []string{"workspace", "default", "client", "box", "outcome", "refused"}, 1},
		{"switchboard_invocations_total", []string{"workspace", "default", "client", "box", "outcome", "cancelled"}, 1},
		{"switchboard_invocations_total", []string{"client", "every", "outcome", "completed"}, 1},
		{"switchboard_invocation_seconds", []string{"workspace", "default"}, 3},
		// ok, fail and slow twice; the MCP call is the mailbox's one Call
		{"grpc_server_handled_total", []string{"grpc_method", "Invoke", "grpc_code", "OK"}, 4},
		{"grpc_server_handled_total", []string{"grpc_method", "Call", "grpc_code", "OK"}, 1},
		{"grpc_server_handled_total", []string{"grpc_method", "Invoke", "grpc_code", "NotFound"}, 1},
		{"grpc_server_handled_total", []string{"grpc_method", "Cancel", "grpc_code", "OK"}, 1},
		{"grpc_client_handled_total", []string{"grpc_method", "Cancel", "grpc_code", "OK"}, 1},
		{"switchboard_http_requests_total", []string{"route", "/v1/act", "method", "POST", "code", "404"}, 1},
		{"switchboard_http_requests_total", []string{"route", "/v1/invocations", "method", "POST", "code", "200"}, 2},
		{"switchboard_mailbox_queue_depth", []string{"client", "box"}, 1},
		{"switchboard_mcp_requests_total", []string{"side", "endpoint", "method", "tools/call", "outcome", "ok"}, 1},
		{"switchboard_mcp_requests_total", []string{"side", "upstream", "method", "tools/call", "outcome", "ok"}, 1},
		{"switchboard_bridge_servers", []string{"state", "failed"}, 1},
	} {
		if got := delta(c.name, c.labels...); got != c.want {
			t.Errorf("%s%v moved by %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if got := after.Value("switchboard_bridge_faults_total", "server", "broken", "transport", "stdio"); got < 2 {
		t.Errorf("faults of the broken server = %v, want its crashes counted", got)
	}
	if got := after.Value("switchboard_bridge_restarts_total", "server", "broken"); got < 1 {
		t.Errorf("restarts of the broken server = %v, want at least one", got)
	}
	if got := after.Value("switchboard_bridge_servers", "state", "running"); got != 1 {
		t.Errorf("running servers = %v, want every", got)
	}
	if got := after.Value("switchboard_registry_hosts_present"); got < 2 {
		t.Errorf("hosts present = %v, want box and every", got)
	}
	if got := after.Value("switchboard_http_requests_total", "route", telemetry.Unmatched); got != 0 {
		t.Errorf("%v requests fell through every route", got)
	}
	dashboardMetricsExist(t, after)
}

// dashboardMetricsExist holds the deployment's Grafana dashboard to what
// the suite exports: every metric it queries, with every label it groups
// or filters by, is in a live scrape (a histogram's _bucket series as its
// family).
func dashboardMetricsExist(t *testing.T, m testkit.Metrics) {
	t.Helper()
	for _, name := range deploy.DashboardMetrics {
		family := strings.TrimSuffix(name, "_bucket")
		series := m.Series(family)
		if len(series) == 0 {
			t.Errorf("the dashboard queries %s, which the suite does not export", name)
			continue
		}
		for _, label := range deploy.DashboardLabels[name] {
			if len(m.LabelValues(family, label)) == 0 {
				t.Errorf("the dashboard reads label %q of %s, which no series has", label, name)
			}
		}
	}
}
