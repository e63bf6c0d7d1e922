package gateway

import (
	"log/slog"
	"net/http"
	"time"
)

// logRequests logs every request at debug, and the gateway's own failures
// (500, 502) at error: the same split as the kit's gRPC request log.
func logRequests(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r)
		level := slog.LevelDebug
		if sw.status == http.StatusInternalServerError || sw.status == http.StatusBadGateway {
			level = slog.LevelError
		}
		log.Log(r.Context(), level, "http request", "method", r.Method, "path", r.URL.Path,
			"status", sw.status, "took", time.Since(start))
	})
}

// statusWriter remembers the status. It unwraps (for
// http.ResponseController) and flushes (the streaming REST routes need a
// Flusher), so wrapping it costs the handlers nothing.
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

// Flush sends what is buffered to the client.
func (w *statusWriter) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

// Unwrap gives http.ResponseController the writer underneath.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
