package testkit

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Metrics is one scrape of a /metrics endpoint, parsed with Prometheus's
// own text parser.
type Metrics map[string]*dto.MetricFamily

// ParseMetrics parses the Prometheus text format.
func ParseMetrics(r io.Reader) (Metrics, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parsing the metrics: %w", err)
	}
	return Metrics(fams), nil
}

// Scrape GETs url (over tlsCfg when set, with header's values) and parses
// the answer; anything but a 200 fails t.
func Scrape(t TB, url string, tlsCfg *tls.Config, header http.Header) Metrics {
	t.Helper()
	status, body := ScrapeStatus(t, url, tlsCfg, header)
	if status != http.StatusOK {
		t.Fatalf("GET %s = %d: %s", url, status, body)
	}
	m, err := ParseMetrics(strings.NewReader(body))
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return m
}

// ScrapeHandler parses what h (a registry's handler) serves at /metrics.
func ScrapeHandler(t TB, h http.Handler) Metrics {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	m, err := ParseMetrics(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Request makes one HTTP request with the headers h and returns the
// status and body.
func Request(t TB, method, url string, h http.Header, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	res, err := HTTP.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return res.StatusCode, string(b)
}

// ScrapeStatus GETs url and returns the status and body.
func ScrapeStatus(t TB, url string, tlsCfg *tls.Config, header http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	defer c.CloseIdleConnections()
	res, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return res.StatusCode, string(b)
}

// Value returns the value of the series of name whose labels include
// labels (pairs: name, value), summed over every such series; a counter,
// gauge, or a histogram's or summary's sample count. 0 when none.
func (m Metrics) Value(name string, labels ...string) float64 {
	var sum float64
	for _, s := range m.Series(name, labels...) {
		switch {
		case s.Counter != nil:
			sum += s.Counter.GetValue()
		case s.Gauge != nil:
			sum += s.Gauge.GetValue()
		case s.Histogram != nil:
			sum += float64(s.Histogram.GetSampleCount())
		case s.Summary != nil:
			sum += float64(s.Summary.GetSampleCount())
		case s.Untyped != nil:
			sum += s.Untyped.GetValue()
		}
	}
	return sum
}

// Series returns the series of name whose labels include labels.
func (m Metrics) Series(name string, labels ...string) []*dto.Metric {
	f := m[name]
	if f == nil {
		return nil
	}
	var out []*dto.Metric
	for _, s := range f.GetMetric() {
		if hasLabels(s, labels) {
			out = append(out, s)
		}
	}
	return out
}

func hasLabels(s *dto.Metric, pairs []string) bool {
	for i := 0; i+1 < len(pairs); i += 2 {
		found := false
		for _, l := range s.GetLabel() {
			if l.GetName() == pairs[i] && l.GetValue() == pairs[i+1] {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// LabelValues returns the distinct values label takes in name's series,
// sorted.
func (m Metrics) LabelValues(name, label string) []string {
	seen := map[string]bool{}
	for _, s := range m.Series(name) {
		for _, l := range s.GetLabel() {
			if l.GetName() == label {
				seen[l.GetValue()] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// Names returns every metric family name, sorted.
func (m Metrics) Names() []string {
	out := make([]string, 0, len(m))
	for n := range m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// HeaderClient is an HTTP client that sends h with every request: an MCP
// client's transport with the caller's identity.
func HeaderClient(h http.Header) *http.Client {
	return &http.Client{Transport: WithHeaders(h, HTTP.Transport)}
}

// WithHeaders is base sending h with every request.
func WithHeaders(h http.Header, base http.RoundTripper) http.RoundTripper {
	return headerTransport{h: h, base: base}
}

type headerTransport struct {
	h    http.Header
	base http.RoundTripper
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.h {
		r.Header[k] = v
	}
	return t.base.RoundTrip(r)
}
