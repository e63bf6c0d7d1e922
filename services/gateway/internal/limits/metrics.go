package limits

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/telemetry"
)

// RefusalsMetric counts the calls the limits refused (docs/observability.md).
const RefusalsMetric = "switchboard_call_limit_refusals_total"

// refusals is the counter of refused calls; its zero value counts nothing
// (a limiter made without Count).
type refusals struct{ vec *prometheus.CounterVec }

func (r refusals) count(g identity.Grade, limit string) {
	if r.vec != nil {
		r.vec.WithLabelValues(string(g), limit).Inc()
	}
}

// Count counts the limiter's refusals on t, by grade and by the limit that
// refused (rate, in_flight, callers). The labels are bounded: four grades,
// three limits. Call it before the limiter serves.
func (l *Limiter) Count(t *telemetry.Telemetry) {
	l.refused = refusals{telemetry.Shared(t, RefusalsMetric, func() *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: RefusalsMetric,
			Help: "Calls refused by the per-caller call limits, by the caller's grade and the limit (rate, in_flight, or callers: the table of callers full).",
		}, []string{"grade", "limit"})
	})}
}
