package telemetry_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/switchboard-run/switchboard/kit/suite/telemetry"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

func scrape(t *testing.T, tel *telemetry.Telemetry) testkit.Metrics {
	t.Helper()
	return testkit.ScrapeHandler(t, tel.MetricsHandler())
}

// Ten thousand values are at most max+1 label values: the first max keep
// their names and every later one is Other.
func TestBoundedKeepsTheFirstNamesAndFoldsTheRest(t *testing.T) {
	t.Parallel()
	b := telemetry.NewBounded(20)
	seen := map[string]bool{}
	for i := range 10000 {
		v := b.Value(fmt.Sprintf("client-%d", i))
		seen[v] = true
		if i < 20 && v != fmt.Sprintf("client-%d", i) {
			t.Fatalf("value %d = %q, want its own name", i, v)
		}
	}
	if len(seen) != 21 || !seen[telemetry.Other] {
		t.Errorf("%d distinct label values, want 21 with %q", len(seen), telemetry.Other)
	}
	if got := b.Value("client-3"); got != "client-3" {
		t.Errorf("a named value came back as %q", got)
	}
}

// Requests are counted by the route pattern the mux matched (never the
// path: /items/1 and /items/2 are one series), by method and by status.
func TestHTTPCountsByRoutePatternMethodAndStatus(t *testing.T) {
	t.Parallel()
	tel := telemetry.NewMetrics()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") == "missing" {
			http.NotFound(w, r)
		}
	})
	h := tel.HTTP(telemetry.Routed(mux))
	for _, path := range []string{"/items/1", "/items/2", "/items/missing", "/nowhere"} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, path, nil))
	}
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("BREW", "/items/1", nil))
	m := scrape(t, tel)
	for _, c := range []struct {
		route, method, code string
		want                float64
	}{
		{"/items/{id}", "GET", "200", 2},
		{"/items/{id}", "GET", "404", 1},
		{telemetry.Unmatched, "GET", "404", 1},
		{telemetry.Unmatched, "other", "405", 1},
	} {
		if got := m.Value("switchboard_http_requests_total", "route", c.route, "method", c.method, "code", c.code); got != c.want {
			t.Errorf("requests{route=%q,method=%q,code=%q} = %v, want %v", c.route, c.method, c.code, got, c.want)
		}
	}
	if got := m.Value("switchboard_http_request_seconds", "route", "/items/{id}"); got != 3 {
		t.Errorf("latency samples for /items/{id} = %v, want 3", got)
	}
}

// Off installs nothing: the floor benchmarks compare against.
func TestOffCountsNothing(t *testing.T) {
	t.Parallel()
	tel := telemetry.Off()
	h := tel.HTTP(http.NotFoundHandler())
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	if got := scrape(t, tel).Value("switchboard_http_requests_total"); got != 0 {
		t.Errorf("Off counted %v requests", got)
	}
	if srv, cl := tel.Server(), tel.Client(); srv.Unary != nil || srv.Stream != nil || srv.Stats != nil || cl.Unary != nil || cl.Stream != nil || cl.Stats != nil {
		t.Error("Off installs gRPC interceptors")
	}
}

// Without OTEL_* nothing is traced; an unknown exporter or protocol is
// refused by name; an OTLP endpoint turns tracing on.
func TestTracingFollowsTheStandardEnvironment(t *testing.T) {
	for _, c := range []struct {
		name    string
		env     map[string]string
		tracing bool
		err     string
	}{
		{name: "nothing set", tracing: false},
		{name: "none wins over an endpoint", env: map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}},
		{name: "an endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}, tracing: true},
		{name: "grpc", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, tracing: true},
		{name: "zipkin", env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, err: `OTEL_TRACES_EXPORTER="zipkin"`},
		{name: "a bad protocol", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, err: `OTEL_EXPORTER_OTLP_PROTOCOL="http/json"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, k := range []string{"OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
				"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"} {
				t.Setenv(k, c.env[k])
			}
			tel, err := telemetry.New(context.Background(), "test")
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("New = %v, want an error naming %s", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer tel.Shutdown(context.Background())
			if tel.Tracing() != c.tracing {
				t.Errorf("Tracing() = %v, want %v", tel.Tracing(), c.tracing)
			}
			if srv, cl := tel.Server(), tel.Client(); (srv.Stats != nil) != c.tracing || (cl.Stats != nil) != c.tracing || srv.Unary == nil || cl.Unary == nil {
				t.Errorf("tracing %v: server %+v, client %+v; want the metrics interceptors, and stats handlers only when tracing", c.tracing, srv, cl)
			}
		})
	}
}

// A request carrying a W3C traceparent is a span of that trace.
func TestHTTPContinuesTheCallersTrace(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tel := telemetry.NewWith(exp, "test")
	h := tel.HTTP(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	req := httptest.NewRequest(http.MethodGet, "/x", nil)
	req.Header.Set("Traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	h.ServeHTTP(httptest.NewRecorder(), req)
	spans := exp.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1", len(spans))
	}
	if got := spans[0].SpanContext.TraceID().String(); got != "0af7651916cd43dd8448eb211c80319c" {
		t.Errorf("trace id %s, want the caller's", got)
	}
	if got := spans[0].Parent.SpanID().String(); got != "b7ad6b7169203331" {
		t.Errorf("parent span %s, want the caller's", got)
	}
}

// A 103 Early Hints sent first is not the status recorded: the final one
// that follows is.
func TestTheStatusRecordedIsTheFinalOne(t *testing.T) {
	t.Parallel()
	sw := telemetry.NewStatusWriter(httptest.NewRecorder())
	sw.WriteHeader(http.StatusEarlyHints)
	sw.WriteHeader(http.StatusServiceUnavailable)
	if sw.Code != http.StatusServiceUnavailable {
		t.Errorf("recorded %d; want 503", sw.Code)
	}
}
