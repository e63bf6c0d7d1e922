package process

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
	"time"

	"github.com/switchboard-run/switchboard/kit/lib/hostguard"
	"github.com/switchboard-run/switchboard/kit/lib/listen"
	"github.com/switchboard-run/switchboard/kit/suite/telemetry"
)

// Observe is how a process is looked at from outside
// (docs/observability.md): --metrics-addr serves Prometheus metrics,
// --debug-addr serves net/http/pprof on loopback only.
type Observe struct {
	MetricsAddr string
	DebugAddr   string
	// NoCallMetrics is --call-metrics=false: no gRPC or HTTP call is
	// counted (the services' own series still are). The zero value counts.
	NoCallMetrics bool
	// MetricsCert and MetricsKey are a serving leaf for the metrics
	// listener, for a process whose own leaf serves nothing (a tool
	// host's: only a service's leaf serves, kit/suite/certs).
	MetricsCert, MetricsKey string
	// MetricsHosts are more names the metrics listener answers to.
	MetricsHosts string
}

// Register adds --metrics-addr and --debug-addr.
func (o *Observe) Register(fs *flag.FlagSet) {
	fs.StringVar(&o.MetricsAddr, "metrics-addr", "", "host:port to serve Prometheus metrics at /metrics (empty: none); outside dev mode only to a scrape or admin client certificate")
	fs.StringVar(&o.DebugAddr, "debug-addr", "", "loopback host:port to serve net/http/pprof at /debug/pprof/ (empty: none)")
	fs.StringVar(&o.MetricsHosts, "metrics-hosts", "", "comma-separated names the metrics listener answers to besides loopback, its listen host and its certificate's names (a Host header a scraper sends)")
	fs.StringVar(&o.MetricsCert, "metrics-tls-cert", "", "PEM certificate the metrics listener serves with, for a process whose own leaf does not serve (a tool host's: switchboard certs leaf --metrics-hosts mints one)")
	fs.StringVar(&o.MetricsKey, "metrics-tls-key", "", "PEM key of --metrics-tls-cert")
	fs.Var(negated{&o.NoCallMetrics}, "call-metrics", "count every gRPC and HTTP call (false: only the services' own series; what the benchmarks compare against)")
}

// negated is a boolean flag stored inverted, so the zero value of the
// field it sets is the flag's default, true.
type negated struct{ p *bool }

func (n negated) String() string {
	if n.p == nil {
		return "true"
	}
	return strconv.FormatBool(!*n.p)
}

func (n negated) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("want true or false, not %q", s)
	}
	*n.p = !v
	return nil
}

func (n negated) IsBoolFlag() bool { return true }

// Observing is what Open started: the addresses it listens on, and how
// to stop.
type Observing struct {
	// MetricsAddr and DebugAddr are the listeners' addresses ("" when not
	// serving): with port 0 asked, the ports chosen.
	MetricsAddr, DebugAddr string

	servers []*http.Server
}

// Open starts the listeners o names. Outside dev mode the metrics listener
// serves TLS with serverTLS and admits only scrapers' certificates
// (telemetry.Scrapers); the debug listener is loopback only in every mode,
// since a profile shows the process's memory. Both answer only the names
// they are dialed by, and no page of another origin (kit/lib/hostguard): a
// rebinding page could otherwise read /debug/pprof/cmdline or start
// profiles.
func (o *Observe) Open(log *slog.Logger, tel *telemetry.Telemetry, dev bool, serverTLS func() (*tls.Config, error)) (*Observing, error) {
	if o.NoCallMetrics {
		tel.CountCalls(false)
	}
	obs := &Observing{}
	if o.DebugAddr != "" {
		if err := o.openDebug(log, obs); err != nil {
			return nil, err
		}
	}
	if o.MetricsAddr != "" {
		if err := o.openMetrics(log, obs, tel, dev, serverTLS); err != nil {
			obs.Close()
			return nil, err
		}
	}
	return obs, nil
}

func (o *Observe) openDebug(log *slog.Logger, obs *Observing) error {
	if host, _, err := net.SplitHostPort(o.DebugAddr); err != nil || !listen.IsLoopbackHost(host) {
		return fmt.Errorf("--debug-addr %q: pprof is served on loopback only (127.0.0.1, ::1 or localhost): a profile shows the process's memory", o.DebugAddr)
	}
	guard, err := hostguard.New(hostguard.Config{Listen: o.DebugAddr, Dev: true, What: "this pprof listener"})
	if err != nil {
		return err
	}
	lis, err := net.Listen("tcp", o.DebugAddr)
	if err != nil {
		return fmt.Errorf("--debug-addr: %w", err)
	}
	obs.DebugAddr = lis.Addr().String()
	obs.serve(log, lis, guard.Wrap(pprofMux()), "pprof")
	return nil
}

func pprofMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

func (o *Observing) serve(log *slog.Logger, lis net.Listener, h http.Handler, what string) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 64 << 10}
	o.servers = append(o.servers, srv)
	log.Info("serving "+what, "addr", lis.Addr().String())
	go func() {
		if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("serving "+what+" stopped", "err", err)
		}
	}()
}

// Close stops the listeners.
func (o *Observing) Close() {
	if o == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	for _, s := range o.servers {
		if s.Shutdown(ctx) != nil {
			s.Close()
		}
	}
}
