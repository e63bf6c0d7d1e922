package gateway

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/switchboard-run/switchboard/kit/suite/telemetry"
)

// logRequests logs every request at debug, and the gateway's own failures
// (500, 502) at error: the same split as the kit's gRPC request log. When
// tracing, the line carries the request's trace and span ids (the kit's
// logger adds them from the context).
func logRequests(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := telemetry.NewStatusWriter(w)
		next.ServeHTTP(sw, r)
		level := slog.LevelDebug
		if sw.Code == http.StatusInternalServerError || sw.Code == http.StatusBadGateway {
			level = slog.LevelError
		}
		log.Log(r.Context(), level, "http request", "method", r.Method, "path", r.URL.Path,
			"status", sw.Code, "took", time.Since(start))
	})
}
