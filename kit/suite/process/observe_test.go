package process_test

import (
	"crypto/tls"
	"flag"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/switchboard-run/switchboard/kit/lib/logging"
	"github.com/switchboard-run/switchboard/kit/suite/process"
	"github.com/switchboard-run/switchboard/kit/suite/telemetry"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// In dev mode the metrics and pprof listeners serve plain HTTP on
// loopback.
func TestObserveServesMetricsAndPprof(t *testing.T) {
	t.Parallel()
	o := process.Observe{MetricsAddr: "127.0.0.1:0", DebugAddr: "127.0.0.1:0"}
	obs, err := o.Open(logging.Discard(), telemetry.NewMetrics(), true, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer obs.Close()
	m := testkit.Scrape(t, "http://"+obs.MetricsAddr+"/metrics", nil, nil)
	if m["go_goroutines"] == nil || m["process_cpu_seconds_total"] == nil {
		t.Errorf("the Go and process collectors are missing: %v", m.Names())
	}
	if code, body := testkit.ScrapeStatus(t, "http://"+obs.DebugAddr+"/debug/pprof/", nil, nil); code != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Errorf("pprof index = %d %.80q", code, body)
	}
}

// pprof shows the process's memory: it is served on loopback only, in
// every mode, and the refusal says so.
func TestDebugAddrIsLoopbackOnly(t *testing.T) {
	t.Parallel()
	o := process.Observe{DebugAddr: "0.0.0.0:0"}
	_, err := o.Open(logging.Discard(), telemetry.NewMetrics(), false, nil)
	if err == nil || !strings.Contains(err.Error(), `--debug-addr "0.0.0.0:0": pprof is served on loopback only`) {
		t.Errorf("Open = %v, want the loopback refusal", err)
	}
}

// Outside dev mode the metrics listener is TLS with the process's
// certificate, and only a scraper's or an admin's certificate reads it: a
// service's does not (no service scrapes another).
func TestProductionMetricsAreForScrapersAndAdmins(t *testing.T) {
	t.Parallel()
	pki := testkit.NewPKI(t)
	serverTLS := pki.ServerTLS(t, "mailbox", "service")
	o := process.Observe{MetricsAddr: "127.0.0.1:0"}
	obs, err := o.Open(logging.Discard(), telemetry.NewMetrics(), false, func() (*tls.Config, error) { return serverTLS, nil })
	if err != nil {
		t.Fatal(err)
	}
	defer obs.Close()
	url := "https://" + obs.MetricsAddr + "/metrics"
	for _, c := range []struct {
		name, grade string
		want        int
		says        string
	}{
		{"prometheus", "scrape", http.StatusOK, "go_goroutines"},
		{"registry", "service", http.StatusForbidden, "registry is a service"},
		{"ops", "admin", http.StatusOK, "go_goroutines"},
		{"agent", "driver", http.StatusForbidden, "agent is a driver; metrics are served to a scraper (a certificate or token of grade scrape) or an admin"},
		{"laptop", "host", http.StatusForbidden, "laptop is a host"},
	} {
		code, body := testkit.ScrapeStatus(t, url, pki.ClientTLS(t, c.name, c.grade), nil)
		if code != c.want || !strings.Contains(body, c.says) {
			t.Errorf("%s (%s): %d %.100q, want %d saying %q", c.name, c.grade, code, body, c.want, c.says)
		}
	}
	noCert := &tls.Config{RootCAs: serverTLS.ClientCAs, MinVersion: tls.VersionTLS13}
	if code, body := testkit.ScrapeStatus(t, url, noCert, nil); code != http.StatusUnauthorized || !strings.Contains(body, "client certificate") {
		t.Errorf("no certificate: %d %.100q, want 401 naming the certificate", code, body)
	}
}

// A tool host's own leaf serves nothing, so its metrics listener refuses
// to start with it, and serves with the serving leaf of --metrics-tls-cert.
func TestAHostsMetricsListenerServesWithItsServingLeaf(t *testing.T) {
	t.Parallel()
	pki := testkit.NewPKI(t)
	host := pki.Leaf(t, "laptop", "host")
	hostTLS, err := host.ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	serverTLS := func() (*tls.Config, error) { return hostTLS, nil }
	o := process.Observe{MetricsAddr: "127.0.0.1:0"}
	if _, err := o.Open(logging.Discard(), telemetry.NewMetrics(), false, serverTLS); err == nil || !strings.Contains(err.Error(), "--metrics-tls-cert") {
		t.Fatalf("Open with a host's leaf = %v; want a refusal naming --metrics-tls-cert", err)
	}
	o.MetricsCert, o.MetricsKey = pki.Serving(t, "laptop", host)
	obs, err := o.Open(logging.Discard(), telemetry.NewMetrics(), false, serverTLS)
	if err != nil {
		t.Fatal(err)
	}
	defer obs.Close()
	if code, body := testkit.ScrapeStatus(t, "https://"+obs.MetricsAddr+"/metrics", pki.ClientTLS(t, "prometheus", "scrape"), nil); code != http.StatusOK {
		t.Fatalf("a scraper of the host's metrics: %d %.100q", code, body)
	}
}

// --call-metrics=false counts no call; the default counts them.
func TestCallMetricsFlag(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args    []string
		counted bool
	}{{nil, true}, {[]string{"--call-metrics=false"}, false}, {[]string{"--call-metrics"}, true}} {
		var o process.Observe
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		o.Register(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		tel := telemetry.NewMetrics()
		obs, err := o.Open(logging.Discard(), tel, true, nil)
		if err != nil {
			t.Fatal(err)
		}
		obs.Close()
		if got := tel.Server().Unary != nil; got != c.counted {
			t.Errorf("%v: counted %v, want %v", c.args, got, c.counted)
		}
	}
}

// The metrics and pprof listeners answer only the names they are dialed
// by and no page of another origin: a page rebound to 127.0.0.1 could
// otherwise read /debug/pprof/cmdline, start profiles, or read metrics
// with a browser's certificate.
func TestMetricsAndPprofRefuseForeignHostsAndOrigins(t *testing.T) {
	t.Parallel()
	pki := testkit.NewPKI(t)
	serverTLS := pki.ServerTLS(t, "registry", "service")
	dev := process.Observe{MetricsAddr: "127.0.0.1:0", DebugAddr: "127.0.0.1:0"}
	devObs, err := dev.Open(logging.Discard(), telemetry.NewMetrics(), true, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer devObs.Close()
	prod := process.Observe{MetricsAddr: "127.0.0.1:0", MetricsHosts: "registry.example"}
	prodObs, err := prod.Open(logging.Discard(), telemetry.NewMetrics(), false, func() (*tls.Config, error) { return serverTLS, nil })
	if err != nil {
		t.Fatal(err)
	}
	defer prodObs.Close()
	scraper := pki.ClientTLS(t, "prometheus", "scrape")
	get := func(url, host, origin string, tlsCfg *tls.Config) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if host != "" {
			req.Host = host
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}}
		defer c.CloseIdleConnections()
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	pprof := "http://" + devObs.DebugAddr + "/debug/pprof/cmdline"
	for _, tc := range []struct {
		name, url, host, origin string
		tls                     *tls.Config
		want                    int
		says                    string
	}{
		{"pprof for loopback", pprof, "", "", nil, 200, ""},
		{"pprof for a rebound name", pprof, "evil.example:8080", "", nil, 403, `this pprof listener does not answer to Host "evil.example:8080"`},
		{"pprof for a page of another site", pprof, "", "http://evil.example", nil, 403, `this pprof listener refuses requests from Origin "http://evil.example": no page of another origin may call it`},
		{"dev metrics for a rebound name", "http://" + devObs.MetricsAddr + "/metrics", "evil.example", "", nil, 403, "dev mode answers loopback names only"},
		{"metrics for a name of its certificate", "https://" + prodObs.MetricsAddr + "/metrics", "localhost", "", scraper, 200, "go_goroutines"},
		{"metrics for a name of --metrics-hosts", "https://" + prodObs.MetricsAddr + "/metrics", "registry.example:9090", "", scraper, 200, "go_goroutines"},
		{"metrics for a rebound name, even with a scraper's certificate", "https://" + prodObs.MetricsAddr + "/metrics", "evil.example", "", scraper, 403,
			`this metrics listener does not answer to Host "evil.example": it answers to localhost, 127.0.0.1, ::1, registry.example (add the name with --metrics-hosts)`},
	} {
		if code, body := get(tc.url, tc.host, tc.origin, tc.tls); code != tc.want || !strings.Contains(body, tc.says) {
			t.Errorf("%s: %d %.200q; want %d saying %q", tc.name, code, body, tc.want, tc.says)
		}
	}
}
