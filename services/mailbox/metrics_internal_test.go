package mailbox

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/switchboard-run/switchboard/kit/lib/logging"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/registryview"
	"github.com/switchboard-run/switchboard/kit/suite/telemetry"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
)

// Ten thousand clients do not make ten thousand series: the client label
// keeps MetricClients names and folds the rest into one.
func TestTenThousandClientsStayBounded(t *testing.T) {
	t.Parallel()
	tel := telemetry.NewMetrics()
	s := &Service{view: registryview.New(nil, identity.Self{}, logging.Discard()), metrics: newMetrics(tel)}
	for i := range 10_000 {
		client := fmt.Sprintf("host-%05d", i)
		s.answered(inflight.Ended{ID: "inv-x", Client: client, Posted: time.Now(), By: inflight.ByHost})
		s.refused(context.Background(), client, "t", "", nil, nil)
	}
	s.refused(context.Background(), "not a client name!", "t", "", nil, nil)
	m := testkit.ScrapeHandler(t, tel.MetricsHandler())
	clients := m.LabelValues("switchboard_invocations_total", "client")
	if len(clients) != MetricClients+1 {
		t.Fatalf("%d client label values, want %d", len(clients), MetricClients+1)
	}
	if got := m.Value("switchboard_invocations_total", "client", telemetry.Other); got != 2*(10_000-MetricClients)+1 {
		t.Errorf("folded into %q: %v", telemetry.Other, got)
	}
	if got := m.Value("switchboard_invocations_total"); got != 20_001 {
		t.Errorf("%v invocations counted, want every one of 20001", got)
	}
}

// The depth gauge names the deepest queues and sums the rest.
func TestTopNKeepsTheDeepestAndSumsTheRest(t *testing.T) {
	t.Parallel()
	depths := map[string]int{"a": 1, "b": 9, "c": 5, "d": 5, "e": 2}
	got := topN(depths, 3)
	want := map[string]int{"b": 9, "c": 5, "d": 5, telemetry.Other: 3}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("topN = %v, want %v", got, want)
	}
}
