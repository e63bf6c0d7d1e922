package gateway

import (
	"net/http"

	"github.com/switchboard-run/switchboard/kit/suite/telemetry"
	"github.com/switchboard-run/switchboard/services/gateway/internal/httpauth"
	"github.com/switchboard-run/switchboard/services/gateway/internal/httperr"
)

// metricsRoute serves the process's metrics (docs/observability.md). In
// dev mode the gateway is loopback-only and behind the Host guard, and
// the route is open, so `curl :8080/metrics` works as the tour shows; in
// production only a scraper or an admin (certificate or token) reads
// them, since they name every workspace and client.
func metricsRoute(tel *telemetry.Telemetry, who httpauth.Resolver) http.Handler {
	metrics := tel.MetricsHandler()
	if who.Dev {
		return metrics
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := who.Resolve(r)
		if err != nil {
			httperr.WriteErr(w, err)
			return
		}
		if !telemetry.MayScrape(id) {
			httperr.Write(w, http.StatusForbidden, telemetry.Refusal(id))
			return
		}
		metrics.ServeHTTP(w, r)
	})
}
