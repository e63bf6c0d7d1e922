// Package httperr turns refusals into the act envelope
// {"ok":false,"error":"<sentence>"} and gRPC codes into HTTP statuses, the
// one way for every route of the gateway: the act endpoint, the REST routes,
// identity, limits and health.
package httperr

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/switchboard-run/switchboard/kit/lib/rawjson"
)

// StatusClientClosed is the status of a request whose client went away
// (nginx's 499): nobody reads it, but logs and tests see it.
const StatusClientClosed = 499

// Status is the HTTP status for a gRPC code.
func Status(c codes.Code) int {
	switch c {
	case codes.OK:
		return http.StatusOK
	case codes.InvalidArgument, codes.OutOfRange:
		return http.StatusBadRequest
	case codes.Unauthenticated:
		return http.StatusUnauthorized
	case codes.PermissionDenied:
		return http.StatusForbidden
	case codes.NotFound:
		return http.StatusNotFound
	case codes.FailedPrecondition, codes.AlreadyExists, codes.Aborted:
		return http.StatusConflict
	case codes.ResourceExhausted:
		return http.StatusTooManyRequests
	case codes.Canceled:
		return StatusClientClosed
	case codes.Unimplemented:
		return http.StatusNotImplemented
	case codes.Unavailable:
		return http.StatusServiceUnavailable
	case codes.DeadlineExceeded:
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}

// Error is a refusal the gateway makes itself, with its HTTP status.
type Error struct {
	// Status is the HTTP status to answer with.
	Status int
	// Sentence is the one sentence the envelope carries.
	Sentence string
}

func (e *Error) Error() string { return e.Sentence }

// New returns a refusal with the given status and sentence.
func New(status int, format string, args ...any) *Error {
	return &Error{Status: status, Sentence: fmt.Sprintf(format, args...)}
}

// From returns the status and sentence for err: an *Error as it is, a gRPC
// status by its code with its message unchanged (the services' sentences
// reach the caller byte for byte), a context error by its meaning, anything
// else 500 with its text.
func From(err error) (int, string) {
	var e *Error
	if errors.As(err, &e) {
		return e.Status, e.Sentence
	}
	if st, ok := status.FromError(err); ok {
		return Status(st.Code()), st.Message()
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		st := status.FromContextError(err)
		return Status(st.Code()), st.Message()
	}
	return http.StatusInternalServerError, err.Error()
}

// envelope is the refusal shape.
type envelope struct {
	OK    bool   `json:"ok"`
	Error string `json:"error"`
}

// Envelope returns the refusal body {"ok":false,"error":sentence}.
func Envelope(sentence string) []byte {
	b, _ := rawjson.Marshal(envelope{Error: sentence}) // a bool and a string always encode
	return b
}

// Write answers with the envelope. A 401 also says, in WWW-Authenticate,
// that a bearer token is one way in, unless the caller set a challenge of
// its own (the MCP endpoint's points at its OAuth metadata).
func Write(w http.ResponseWriter, status int, sentence string) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	if status == http.StatusUnauthorized && h.Get("WWW-Authenticate") == "" {
		h.Set("WWW-Authenticate", `Bearer realm="switchboard"`)
	}
	w.WriteHeader(status)
	_, _ = w.Write(Envelope(sentence))
}

// WriteErr answers with the envelope for err (see From).
func WriteErr(w http.ResponseWriter, err error) {
	status, sentence := From(err)
	Write(w, status, sentence)
}
