// Package bodylimit bounds request bodies at 16 MiB, the suite's message
// limit (docs/design.md §4), and remembers when a request hit it: the generated REST
// handlers turn every body-read error into INVALID_ARGUMENT, so the error
// handler asks here whether the real cause was size, to answer 413.
package bodylimit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"

	"github.com/switchboard-run/switchboard/kit/suite/grpcserver"
	"github.com/switchboard-run/switchboard/services/gateway/internal/httperr"
)

// MaxBytes is the largest body the gateway reads.
const MaxBytes = grpcserver.MaxMessageBytes

// Sentence is the refusal of a larger body.
var Sentence = fmt.Sprintf("request body is larger than %d MiB", MaxBytes>>20)

type flagKey struct{}

// Wrap refuses a body declared larger than MaxBytes at once, and cuts any
// other body at MaxBytes while reading it.
func Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > MaxBytes {
			// Close rather than drain: the body may be huge.
			w.Header().Set("Connection", "close")
			httperr.Write(w, http.StatusRequestEntityTooLarge, Sentence)
			return
		}
		hit := new(atomic.Bool)
		r = r.WithContext(context.WithValue(r.Context(), flagKey{}, hit))
		r.Body = &limited{ReadCloser: http.MaxBytesReader(base(w), r.Body, MaxBytes), hit: hit}
		next.ServeHTTP(w, r)
	})
}

// base is the server's own writer under any wrappers: MaxBytesReader tells
// it (by an unexported method) to close the connection instead of draining
// an oversize body, and a wrapper would hide that method.
func base(w http.ResponseWriter) http.ResponseWriter {
	for {
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return w
		}
		w = u.Unwrap()
	}
}

// limited records that the limit was reached.
type limited struct {
	io.ReadCloser
	hit *atomic.Bool
}

func (l *limited) Read(p []byte) (int, error) {
	n, err := l.ReadCloser.Read(p)
	if IsTooLarge(err) {
		l.hit.Store(true)
	}
	return n, err
}

// Exceeded reports whether a body read of the request in ctx hit the limit.
func Exceeded(ctx context.Context) bool {
	hit, ok := ctx.Value(flagKey{}).(*atomic.Bool)
	return ok && hit.Load()
}

// IsTooLarge reports whether err is the limit being reached.
func IsTooLarge(err error) bool {
	var mb *http.MaxBytesError
	return errors.As(err, &mb)
}
