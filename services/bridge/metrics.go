package bridge

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	"github.com/switchboard-run/switchboard/kit/suite/mcptelemetry"
	"github.com/switchboard-run/switchboard/kit/suite/telemetry"
)

// MetricServers bounds the server names the bridge's series carry; an
// admin mounts servers, so the bound is a guard, not a limit one meets.
const MetricServers = 200

// metrics are the bridge's own series (docs/observability.md).
type metrics struct {
	faults  *prometheus.CounterVec
	mcp     *mcptelemetry.Metrics
	servers *telemetry.Bounded
}

func newMetrics(t *telemetry.Telemetry, s *Service) *metrics {
	if t == nil {
		t = telemetry.NewMetrics()
	}
	m := &metrics{
		faults: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchboard_bridge_faults_total",
			Help: "Faults a mounted server or plugin backend showed (a crash, a bad line, a failed re-listing), by server and transport (stdio, http, plugin).",
		}, []string{"server", "transport"}),
		mcp:     mcptelemetry.Register(t),
		servers: telemetry.NewBounded(MetricServers),
	}
	t.Registry.MustRegister(m.faults, serversCollector{s: s,
		state: prometheus.NewDesc("switchboard_bridge_servers",
			"Servers mounted on this bridge, by state (idle, starting, running, crashed, failed, stopped).", []string{"state"}, nil),
		restarts: prometheus.NewDesc("switchboard_bridge_restarts_total",
			"Restarts of a mounted server since it was mounted, by server.", []string{"server"}, nil),
	})
	return m
}

// serversCollector reports the mounts as they are at each scrape.
type serversCollector struct {
	s               *Service
	state, restarts *prometheus.Desc
}

func (c serversCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.state; ch <- c.restarts }

func (c serversCollector) Collect(ch chan<- prometheus.Metric) {
	c.s.mu.Lock()
	entries := make([]*entry, 0, len(c.s.entries))
	for _, e := range c.s.entries {
		entries = append(entries, e)
	}
	c.s.mu.Unlock()
	byState := map[bridgev1.State]int{}
	restarts := map[string]int32{}
	for _, e := range entries {
		st := e.status()
		byState[st.GetState()]++
		restarts[c.s.metrics.servers.Value(e.client)] += st.GetRestarts()
	}
	for _, st := range []bridgev1.State{bridgev1.State_STATE_IDLE, bridgev1.State_STATE_STARTING, bridgev1.State_STATE_RUNNING,
		bridgev1.State_STATE_CRASHED, bridgev1.State_STATE_FAILED, bridgev1.State_STATE_STOPPED, bridgev1.State_STATE_STANDBY} {
		ch <- prometheus.MustNewConstMetric(c.state, prometheus.GaugeValue, float64(byState[st]), stateName(st))
	}
	for server, n := range restarts {
		ch <- prometheus.MustNewConstMetric(c.restarts, prometheus.CounterValue, float64(n), server)
	}
}

// stateName is a state as the label says it: "running" for STATE_RUNNING.
func stateName(st bridgev1.State) string {
	return strings.ToLower(strings.TrimPrefix(st.String(), "STATE_"))
}
