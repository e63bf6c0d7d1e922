package process

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"

	"github.com/switchboard-run/switchboard/kit/lib/hostguard"
	"github.com/switchboard-run/switchboard/kit/lib/listen"
	"github.com/switchboard-run/switchboard/kit/suite/envflag"
	"github.com/switchboard-run/switchboard/kit/suite/telemetry"
)

// openMetrics serves /metrics on --metrics-addr: in dev mode on loopback,
// to anyone there; outside it over TLS, to scrapers and admins. It answers
// to the loopback names, its listen host, the names its certificate serves
// as (the names scrapers dial it by) and --metrics-hosts.
func (o *Observe) openMetrics(log *slog.Logger, obs *Observing, tel *telemetry.Telemetry, dev bool, serverTLS func() (*tls.Config, error)) error {
	var h http.Handler = tel.MetricsHandler()
	var c *tls.Config
	hosts := envflag.List(o.MetricsHosts)
	if !dev {
		var err error
		if c, err = o.metricsTLS(serverTLS); err != nil {
			return err
		}
		if leaf := c.Certificates[0].Leaf; leaf != nil {
			hosts = append(hosts, leaf.DNSNames...)
			for _, ip := range leaf.IPAddresses {
				hosts = append(hosts, ip.String())
			}
		}
		h = telemetry.Scrapers(h)
	}
	guard, err := hostguard.New(hostguard.Config{Listen: o.MetricsAddr, Hosts: hosts, Dev: dev,
		What: "this metrics listener", HostsFlag: "--metrics-hosts"})
	if err != nil {
		return err
	}
	lis, err := listen.TCP(o.MetricsAddr, dev)
	if err != nil {
		return fmt.Errorf("--metrics-addr: %w", err)
	}
	obs.MetricsAddr = lis.Addr().String()
	if c != nil {
		lis = tls.NewListener(lis, c)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	obs.serve(log, lis, guard.Wrap(mux), "metrics")
	return nil
}

// metricsTLS is what the metrics listener serves with outside dev mode:
// the process's TLS, with its serving leaf (--metrics-tls-cert) when its own
// does not serve.
func (o *Observe) metricsTLS(serverTLS func() (*tls.Config, error)) (*tls.Config, error) {
	c, err := serverTLS()
	if err != nil || c == nil {
		return nil, fmt.Errorf("--metrics-addr outside dev mode serves TLS and checks the scraper's certificate against the suite's CA: %v", err)
	}
	if (o.MetricsCert == "") != (o.MetricsKey == "") {
		return nil, errors.New("--metrics-tls-cert and --metrics-tls-key go together")
	}
	if o.MetricsCert != "" {
		pair, err := tls.LoadX509KeyPair(o.MetricsCert, o.MetricsKey)
		if err != nil {
			return nil, fmt.Errorf("--metrics-tls-cert/--metrics-tls-key: %w", err)
		}
		c = c.Clone()
		c.Certificates = []tls.Certificate{pair}
		return c, nil
	}
	if leaf := c.Certificates[0].Leaf; leaf != nil && !slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageServerAuth) {
		return nil, fmt.Errorf("--metrics-addr serves TLS, but this process's certificate (CN=%s) is a client's and serves nothing: give the metrics listener a serving leaf with --metrics-tls-cert and --metrics-tls-key (switchboard certs leaf --metrics-hosts mints one)", leaf.Subject.CommonName)
	}
	return c, nil
}
