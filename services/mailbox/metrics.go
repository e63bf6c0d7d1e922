package mailbox

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchboard-run/switchboard/kit/suite/names"
	"github.com/switchboard-run/switchboard/kit/suite/telemetry"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
)

// Metric bounds (docs/observability.md): a suite may serve ten thousand
// clients, and a label value per client would be ten thousand series.
const (
	// MetricClients is how many client names the invocation counter keeps;
	// later ones are counted as telemetry.Other.
	MetricClients = 200
	// MetricWorkspaces is the same bound for workspace names.
	MetricWorkspaces = 100
	// DepthTopN is how many of the deepest queues the depth gauge names;
	// the rest are summed under telemetry.Other.
	DepthTopN = 20
)

// Outcomes of an invocation, as counted.
const (
	OutcomeCompleted = "completed" // answered with exit code 0
	OutcomeFailed    = "failed"    // answered with another exit code
	OutcomeInDoubt   = "in_doubt"  // answered by the mailbox at the hand-off cap
	OutcomeTimedOut  = "timed_out" // answered by the mailbox: its driver's timeout ran out in the queue
	OutcomeCancelled = "cancelled" // cancelled by its poster
	OutcomeRefused   = "refused"   // not posted: the refusal's sentence went back
)

// metrics are the mailbox's own series; the gRPC ones are the kit's.
type metrics struct {
	invocations *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	reads       prometheus.Gauge
	notes       *prometheus.CounterVec
	// streamed counts the completes of Serve streams, which the gRPC
	// series count only as the one stream that carried them.
	streamed *prometheus.CounterVec

	clients, workspaces *telemetry.Bounded
}

func newMetrics(t *telemetry.Telemetry) *metrics {
	m := &metrics{
		invocations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchboard_invocations_total",
			Help: "Invocations by the client's workspace, the client, and outcome (completed, failed, in_doubt, timed_out, cancelled, refused).",
		}, []string{"workspace", "client", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "switchboard_invocation_seconds",
			Help:    "Time from an invocation's post to its answer being stored, by the client's workspace.",
			Buckets: telemetry.LatencyBuckets,
		}, []string{"workspace"}),
		reads: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "switchboard_mailbox_reads_open",
			Help: "Reads (Serve and Follow streams, held Invocations reads) this replica holds open; each client holds at most one.",
		}),
		notes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchboard_progress_notes_total",
			Help: "Progress notes hosts reported on the invocations they run (Report), by the host's workspace.",
		}, []string{"workspace"}),
		streamed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchboard_mailbox_stream_completes_total",
			Help: "Completes hosts sent on their Serve streams, by the gRPC code a unary Complete would have returned (OK: stored).",
		}, []string{"grpc_code"}),
		clients:    telemetry.NewBounded(MetricClients),
		workspaces: telemetry.NewBounded(MetricWorkspaces),
	}
	t.Registry.MustRegister(m.invocations, m.latency, m.reads, m.notes, m.streamed)
	return m
}

// count adds one invocation of client with outcome.
func (s *Service) count(client, outcome string) {
	s.metrics.invocations.WithLabelValues(s.workspaceLabel(client), s.metrics.clients.Value(client), outcome).Inc()
}

// workspaceLabel is client's workspace as a label: the first by name when
// it is in several, "none" when in none the view knows.
func (s *Service) workspaceLabel(client string) string {
	ws := s.view.WorkspaceOf(client)
	if ws == "" {
		return "none"
	}
	return s.metrics.workspaces.Value(ws)
}

// answered counts an answer a store wrote (inflight.Answered), records it
// in the audit trail, and tells the watchers of the answers the mailbox
// writes itself (a host's and a cancel are told by Complete and Cancel,
// which know more of them).
func (s *Service) answered(e inflight.Ended) {
	s.audited(e)
	id, client, c, by := e.ID, e.Client, e.Capture, e.By
	if by == inflight.ByCap || by == inflight.ByTimeout {
		s.answeredItself(id, client, c.ExitCode)
	}
	outcome := OutcomeCompleted
	switch {
	case by == inflight.ByCancel:
		s.count(client, OutcomeCancelled)
		return // not an answer's latency
	case by == inflight.ByCap:
		outcome = OutcomeInDoubt
	case by == inflight.ByTimeout:
		s.count(client, OutcomeTimedOut)
		return // never run: no latency of an answer
	case c.ExitCode != 0:
		outcome = OutcomeFailed
	}
	s.count(client, outcome)
	if !e.Posted.IsZero() {
		s.metrics.latency.WithLabelValues(s.workspaceLabel(client)).Observe(time.Since(e.Posted).Seconds())
	}
}

// refused counts a post the mailbox refused. A refusal for a malformed
// client name is counted under telemetry.Other: the name is not one a
// label should carry.
func (s *Service) refused(ctx context.Context, client, tool, input string, cwd *string, err error) {
	s.auditRefusal(ctx, client, tool, input, cwd, err)
	if names.CheckClient(client) != nil {
		client = telemetry.Other
	}
	s.count(client, OutcomeRefused)
}

// depther is a store that can say how deep each client's queue is.
type depther interface {
	Depths(ctx context.Context) (map[string]int, error)
}

// depthCollector reports the deepest queues at each scrape, read from the
// store then: no series lingers for a queue that drained.
type depthCollector struct {
	store depther
	desc  *prometheus.Desc
}

func (d depthCollector) Describe(ch chan<- *prometheus.Desc) { ch <- d.desc }

func (d depthCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	depths, err := d.store.Depths(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(d.desc, err)
		return
	}
	for client, n := range topN(depths, DepthTopN) {
		ch <- prometheus.MustNewConstMetric(d.desc, prometheus.GaugeValue, float64(n), client)
	}
}

// topN keeps the n largest values by name and sums the rest under
// telemetry.Other (ties broken by name, so a scrape is stable).
func topN(depths map[string]int, n int) map[string]int {
	type kv struct {
		k string
		v int
	}
	all := make([]kv, 0, len(depths))
	for k, v := range depths {
		all = append(all, kv{k, v})
	}
	slices.SortFunc(all, func(a, b kv) int {
		return cmp.Or(cmp.Compare(b.v, a.v), cmp.Compare(a.k, b.k))
	})
	out := make(map[string]int, min(len(all), n+1))
	for i, e := range all {
		if i < n {
			out[e.k] = e.v
		} else {
			out[telemetry.Other] += e.v
		}
	}
	return out
}

func newDepthCollector(store depther) depthCollector {
	return depthCollector{store: store, desc: prometheus.NewDesc("switchboard_mailbox_queue_depth",
		"Invocations waiting in a client's queue (queued, or handed without an answer), for the "+strconv.Itoa(DepthTopN)+
			" deepest queues; the rest summed as client=\"_other\". Every replica reports the whole store: take the max across replicas.",
		[]string{"client"}, nil)}
}
