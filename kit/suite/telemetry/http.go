package telemetry

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/trace"
)

// Unmatched is the route label of a request no route matched: a scanner's
// thousand paths are one series.
const Unmatched = "unmatched"

type httpMetrics struct {
	requests *prometheus.CounterVec
	seconds  *prometheus.HistogramVec
}

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchboard_http_requests_total",
			Help: "HTTP requests served, by route pattern, method and status code.",
		}, []string{"route", "method", "code"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "switchboard_http_request_seconds",
			Help:    "Time to serve an HTTP request, by route pattern.",
			Buckets: LatencyBuckets,
		}, []string{"route"}),
	}
	reg.MustRegister(m.requests, m.seconds)
	return m
}

// route is where the innermost router writes the pattern it matched.
type route struct{ name string }

type routeKey struct{}

// SetRoute names the route of the request ctx belongs to; the first name
// set wins, so the innermost router (which knows the most precise
// pattern) names it, and the routers around it leave it be.
func SetRoute(ctx context.Context, name string) {
	if r, ok := ctx.Value(routeKey{}).(*route); ok && r.name == "" {
		r.name = name
	}
}

// Routed names each request's route by the pattern mux matched.
func Routed(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mux.ServeHTTP(w, r)
		// The mux writes the matched pattern into the request it was given;
		// a method in it ("GET /x") is the method label's to say.
		if p := r.Pattern; p != "" {
			if _, path, ok := strings.Cut(p, " "); ok {
				p = path
			}
			SetRoute(r.Context(), p)
		}
	})
}

// HTTP counts every request h serves by its route (see Routed and
// SetRoute), method and status, and times it; when tracing, each request
// is a span that continues the caller's trace context.
func (t *Telemetry) HTTP(h http.Handler) http.Handler {
	if !t.calls {
		return h
	}
	m := t.http
	counted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rt := &route{}
		rec := NewStatusWriter(w)
		h.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), routeKey{}, rt)))
		name := rt.name
		if name == "" {
			name = Unmatched
		}
		m.requests.WithLabelValues(name, method(r.Method), strconv.Itoa(rec.Code)).Inc()
		// The span is named by the route, never the path, which holds ids.
		trace.SpanFromContext(r.Context()).SetName(method(r.Method) + " " + name)
		m.seconds.WithLabelValues(name).Observe(time.Since(start).Seconds())
	})
	if !t.Tracing() {
		return counted
	}
	return otelhttp.NewHandler(counted, "http",
		otelhttp.WithTracerProvider(t.provider), otelhttp.WithPropagators(t.prop),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return method(r.Method) }))
}

// method bounds the method label to the methods HTTP defines.
func method(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "other"
}

// StatusWriter remembers the status code written. It flushes and
// unwraps (for http.ResponseController), so streaming responses (SSE,
// watches) still stream through it.
type StatusWriter struct {
	http.ResponseWriter
	// Code is the status written (200 until one is).
	Code  int
	wrote bool
}

// NewStatusWriter wraps w.
func NewStatusWriter(w http.ResponseWriter) *StatusWriter {
	return &StatusWriter{ResponseWriter: w, Code: http.StatusOK}
}

// WriteHeader records the first final status written (a 1xx, such as
// 103 Early Hints, is informational: the final one follows).
func (s *StatusWriter) WriteHeader(code int) {
	if !s.wrote && code >= 200 {
		s.Code, s.wrote = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

// Write records that the status (200 unless written before) is sent.
func (s *StatusWriter) Write(b []byte) (int, error) {
	s.wrote = true
	return s.ResponseWriter.Write(b)
}

// Flush sends what is buffered to the client.
func (s *StatusWriter) Flush() { _ = http.NewResponseController(s.ResponseWriter).Flush() }

// Unwrap gives http.ResponseController the writer underneath.
func (s *StatusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
