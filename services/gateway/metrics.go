package gateway

import (
	"fmt"
	"net/http"

	"github.com/switchboard-run/switchboard/kit/telemetry"
	"github.com/switchboard-run/switchboard/services/gateway/internal/httpauth"
	"github.com/switchboard-run/switchboard/services/gateway/internal/httperr"
)

// metricsRoute serves the process's metrics (docs/observability.md). In
// dev mode the gateway is loopback-only and behind the Host guard, and
// the route is open, so `curl :8080/metrics` works as the tour shows; in
// production only a service or an admin (certificate or token) reads
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
			httperr.Write(w, http.StatusForbidden, fmt.Sprintf("%s is %s; metrics are served to a service or an admin", id.Name, id.Grade.Article()))
			return
		}
		metrics.ServeHTTP(w, r)
	})
}
