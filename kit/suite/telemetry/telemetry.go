// Package telemetry is how every suite process is observed (docs/observability.md):
// one Prometheus registry per process with the Go and process collectors and
// the gRPC server and client metrics, and an OpenTelemetry tracer provider
// that exports over OTLP only when the standard OTEL_* variables ask for it.
// With no exporter configured, nothing about tracing is installed at all:
// no stats handler, no span, no cost.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// LatencyBuckets are the histogram buckets of every latency the suite
// measures, in seconds: a routed call takes from a fraction of a
// millisecond to the minutes a tool may run.
var LatencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}

// Telemetry is one process's metrics registry and tracer provider.
type Telemetry struct {
	// Registry holds every metric the process serves at /metrics.
	Registry *prometheus.Registry

	server *grpcprom.ServerMetrics
	client *grpcprom.ClientMetrics
	http   *httpMetrics
	calls  bool

	provider trace.TracerProvider
	sdk      *sdktrace.TracerProvider // nil when nothing is exported
	prop     propagation.TextMapPropagator

	mu     sync.Mutex
	shared map[string]any
}

// NewMetrics returns telemetry with every metric and no tracing.
func NewMetrics() *Telemetry {
	t := &Telemetry{
		Registry: prometheus.NewRegistry(),
		server: grpcprom.NewServerMetrics(grpcprom.WithServerHandlingTimeHistogram(
			grpcprom.WithHistogramBuckets(LatencyBuckets))),
		client: grpcprom.NewClientMetrics(grpcprom.WithClientHandlingTimeHistogram(
			grpcprom.WithHistogramBuckets(LatencyBuckets))),
		calls:    true,
		provider: noop.NewTracerProvider(),
		prop:     propagation.NewCompositeTextMapPropagator(w3c, propagation.Baggage{}),
		shared:   map[string]any{},
	}
	t.Registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		t.server, t.client,
	)
	t.http = newHTTPMetrics(t.Registry)
	return t
}

// Off returns telemetry that counts no call: the registry exists (so a
// service's own collectors register as usual) but no interceptor or HTTP
// wrapper is installed. It is the floor the benchmarks measure against.
func Off() *Telemetry {
	t := NewMetrics()
	t.CountCalls(false)
	return t
}

// New returns the process's telemetry: every metric, and traces exported
// as the OTEL_* environment says (docs/observability.md). service names the
// process in its spans unless OTEL_SERVICE_NAME does.
func New(ctx context.Context, service string) (*Telemetry, error) {
	t := NewMetrics()
	exp, err := exporterFromEnv(ctx)
	if err != nil || exp == nil {
		return t, err
	}
	t.traceTo(sdktrace.NewBatchSpanProcessor(exp), service)
	return t, nil
}

// NewWith returns telemetry whose spans all go, as they end, to exp: for
// tests, with the SDK's in-memory exporter.
func NewWith(exp sdktrace.SpanExporter, service string) *Telemetry {
	t := NewMetrics()
	t.traceTo(sdktrace.NewSimpleSpanProcessor(exp), service)
	return t
}

func (t *Telemetry) traceTo(sp sdktrace.SpanProcessor, service string) {
	if env := os.Getenv("OTEL_SERVICE_NAME"); env != "" {
		service = env
	}
	res, _ := resource.Merge(resource.Default(), resource.NewSchemaless(attribute.String("service.name", service)))
	// The sampler is the SDK's default, which reads OTEL_TRACES_SAMPLER and
	// OTEL_TRACES_SAMPLER_ARG: parent-based, always on.
	t.sdk = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sp), sdktrace.WithResource(res))
	t.provider = t.sdk
}

// exporterFromEnv reads the standard variables: OTEL_TRACES_EXPORTER
// ("otlp" or "none"; unset means otlp when an OTLP endpoint is set, else
// none) and OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL ("http/protobuf", the
// default, or "grpc"). The exporters read the endpoint, headers and TLS
// variables themselves.
func exporterFromEnv(ctx context.Context) (sdktrace.SpanExporter, error) {
	kind := strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER"))
	endpoint := os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") + os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	switch {
	case kind == "none", kind == "" && endpoint == "":
		return nil, nil
	case kind != "" && kind != "otlp":
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: this build exports traces over OTLP only; set otlp or none", kind)
	}
	protocol := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch protocol {
	case "", "http/protobuf":
		return otlptracehttp.New(ctx)
	case "grpc":
		return otlptracegrpc.New(ctx)
	}
	return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q: want http/protobuf or grpc", protocol)
}

// CountCalls turns the counting of every gRPC and HTTP call on or off
// (--call-metrics). It takes effect for the servers, connections and
// handlers made after it.
func (t *Telemetry) CountCalls(on bool) { t.calls = on }

// Tracing says whether spans are recorded and exported.
func (t *Telemetry) Tracing() bool { return t.sdk != nil }

// Tracer returns the named tracer (a no-op one when not tracing).
func (t *Telemetry) Tracer(name string) trace.Tracer { return t.provider.Tracer(name) }

// Propagator is the W3C trace context (and baggage) the suite carries on
// every hop.
func (t *Telemetry) Propagator() propagation.TextMapPropagator { return t.prop }

// Shared returns the collector registered under name, making and
// registering it with make the first time: the services of one process
// (switchboard dev) share one registry, and a metric two of them count
// (the mailbox's and the bridge's view of the same thing) must be
// registered once.
func Shared[C prometheus.Collector](t *Telemetry, name string, make func() C) C {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c, ok := t.shared[name]; ok {
		return c.(C)
	}
	c := make()
	t.Registry.MustRegister(c)
	t.shared[name] = c
	return c
}

// MetricsHandler serves the registry in the Prometheus text format.
func (t *Telemetry) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(t.Registry, promhttp.HandlerOpts{Registry: t.Registry})
}

// Shutdown flushes and stops the span exporter, if any.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t.sdk == nil {
		return nil
	}
	if err := t.sdk.Shutdown(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("flushing traces: %w", err)
	}
	return nil
}
