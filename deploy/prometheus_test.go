package deploy

import (
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"
	commoncfg "github.com/prometheus/common/config"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/discovery"

	"github.com/switchboard-run/switchboard/kit/suite/certs"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// promConfig loads deploy/prometheus/prometheus.yml with Prometheus's own
// loader (strict YAML, every field checked), from the file compose mounts
// where Prometheus's --config.file reads it.
func promConfig(t *testing.T, prom *service) *config.Config {
	t.Helper()
	var file string
	for _, a := range prom.cfg.Command {
		if v, ok := strings.CutPrefix(a, "--config.file="); ok {
			file = v
		}
	}
	m, ok := prom.mountAt(file)
	if file == "" || !ok || m.Type != types.VolumeTypeBind || m.Target != file || !m.ReadOnly {
		t.Fatalf("prometheus reads --config.file=%q, which is no read-only bind mount of one file (mount: %+v)", file, m)
	}
	if rel, err := filepath.Rel(testkit.RepoRoot(t), m.Source); err != nil || rel != filepath.Join("deploy", "prometheus", "prometheus.yml") {
		t.Fatalf("prometheus reads its configuration from %s; want deploy/prometheus/prometheus.yml", m.Source)
	}
	cfg, err := config.LoadFile(m.Source, false, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("Prometheus would refuse its configuration: %v", err)
	}
	return cfg
}

// Every process that serves /metrics is scraped once, at its metrics port,
// over https with Prometheus's own leaf, checking the name the process's
// leaf is minted for; and Prometheus's own TLS client, with this file's
// settings and the material the certs step mints, completes mutual TLS
// with a listener of the process's server TLS, which sees a service.
func TestPrometheusScrapesEveryMetricsListener(t *testing.T) {
	t.Parallel()
	o := loadObserved(t)
	svcs, certsStep, prom := o.svcs, o.certs, o.prom
	cfg := promConfig(t, prom)
	vol := t.TempDir()
	mintInto(t, testkit.Build(t, switchboardPkg), certsStep, vol)

	want := metricsServices(t, svcs)
	scraped := map[string]bool{}
	for _, sc := range cfg.ScrapeConfigs {
		t.Run(sc.JobName, func(t *testing.T) {
			target := staticTarget(t, sc)
			host, port, err := net.SplitHostPort(target)
			if err != nil {
				t.Fatal(err)
			}
			s, ok := want[host]
			if !ok {
				t.Fatalf("job %s scrapes %s, which is no service of docker-compose.yml serving /metrics (those are %v)", sc.JobName, target, slices.Sorted(maps.Keys(want)))
			}
			if scraped[host] {
				t.Errorf("%s is scraped twice: every series would count double", host)
			}
			scraped[host] = true
			if _, mport, _ := net.SplitHostPort(s.flags["metrics-addr"]); port != mport {
				t.Errorf("job %s scrapes port %s; %s serves /metrics on %s", sc.JobName, port, host, s.flags["metrics-addr"])
			}
			if sc.JobName != host {
				t.Errorf("job %s scrapes %s; name the job for the service, which the dashboard shows", sc.JobName, host)
			}
			if sc.Scheme != "https" || sc.MetricsPath != "/metrics" {
				t.Errorf("job %s scrapes %s://%s%s; want https and /metrics", sc.JobName, sc.Scheme, target, sc.MetricsPath)
			}
			tc := sc.HTTPClientConfig.TLSConfig
			if tc.ServerName != host || tc.InsecureSkipVerify {
				t.Errorf("job %s checks the name %q (skip: %v); want %q, the name %s's leaf is minted for", sc.JobName, tc.ServerName, tc.InsecureSkipVerify, host, host)
			}
			local := func(path string) string { return certsLocal(t, certsStep, prom, path, vol) }
			scraper, _ := loadLeaf(t, local(tc.CAFile), local(tc.CertFile), local(tc.KeyFile))
			if scraper.Subject.CommonName != "prometheus" || first(scraper.Subject.OrganizationalUnit) != "scrape" {
				t.Errorf("Prometheus presents CN=%s OU=%v; want CN=prometheus OU=scrape", scraper.Subject.CommonName, scraper.Subject.OrganizationalUnit)
			}
			srvLocal := func(path string) string { return certsLocal(t, certsStep, s, path, vol) }
			server := certs.Files{CA: srvLocal(s.flags["tls-ca"]), Cert: srvLocal(s.flags["tls-cert"]), Key: srvLocal(s.flags["tls-key"])}
			if s.flags["metrics-tls-cert"] != "" { // a process whose own leaf serves nothing (a host's)
				server.Cert, server.Key = srvLocal(s.flags["metrics-tls-cert"]), srvLocal(s.flags["metrics-tls-key"])
			}

			// Prometheus's own client, its files where the certs step wrote them.
			hc := sc.HTTPClientConfig
			hc.TLSConfig.CAFile, hc.TLSConfig.CertFile, hc.TLSConfig.KeyFile = local(tc.CAFile), local(tc.CertFile), local(tc.KeyFile)
			client, err := commoncfg.NewClientFromConfig(hc, sc.JobName)
			if err != nil {
				t.Fatal(err)
			}
			addr := serveCaller(t, server)
			u := url.URL{Scheme: sc.Scheme, Host: addr, Path: sc.MetricsPath}
			resp, err := client.Get(u.String())
			if err != nil {
				t.Fatalf("Prometheus could not scrape %s's listener: %v", host, err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if got := string(body); got != "prometheus (scrape)" {
				t.Errorf("%s's listener saw the caller %q; want prometheus (scrape)", host, got)
			}
		})
	}
	for name := range want {
		if !scraped[name] {
			t.Errorf("%s serves /metrics, but no job scrapes it", name)
		}
	}
}

// serveCaller serves, with the TLS of files (a suite listener's, as
// kit/suite/certs builds it), the identity of each caller's certificate.
func serveCaller(t *testing.T, files certs.Files) string {
	t.Helper()
	tlsCfg, err := files.ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{TLSConfig: tlsCfg, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
			http.Error(w, "no client certificate", http.StatusUnauthorized)
			return
		}
		id, err := identity.FromCertificate(r.TLS.PeerCertificates[0])
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, id)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.ServeTLS(ln, "", "")
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// staticTarget is a job's one target: the suite's addresses are fixed.
func staticTarget(t *testing.T, sc *config.ScrapeConfig) string {
	t.Helper()
	var targets []string
	for _, d := range sc.ServiceDiscoveryConfigs {
		static, ok := d.(discovery.StaticConfig)
		if !ok {
			t.Fatalf("job %s discovers targets with %s; the suite's are static", sc.JobName, d.Name())
		}
		for _, g := range static {
			for _, ls := range g.Targets {
				targets = append(targets, string(ls["__address__"]))
			}
		}
	}
	if len(targets) != 1 {
		t.Fatalf("job %s scrapes %v; want one service's address", sc.JobName, targets)
	}
	return targets[0]
}
