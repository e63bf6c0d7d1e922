package httperr

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestEveryCodeMapsToItsStatus(t *testing.T) {
	t.Parallel()
	want := map[codes.Code]int{
		codes.OK:                 200,
		codes.NotFound:           404,
		codes.InvalidArgument:    400,
		codes.OutOfRange:         400,
		codes.Unauthenticated:    401,
		codes.PermissionDenied:   403,
		codes.FailedPrecondition: 409,
		codes.AlreadyExists:      409,
		codes.Aborted:            409,
		codes.ResourceExhausted:  429,
		codes.Unavailable:        503,
		codes.DeadlineExceeded:   504,
		codes.Canceled:           499,
		codes.Unimplemented:      501,
		codes.Internal:           500,
		codes.Unknown:            500,
		codes.DataLoss:           500,
	}
	for c, st := range want {
		if got := Status(c); got != st {
			t.Errorf("Status(%v) = %d, want %d", c, got, st)
		}
	}
}

func TestFromKeepsTheSentenceAndPicksTheStatus(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		err      error
		status   int
		sentence string
	}{
		{"a gRPC status keeps its message unchanged", status.Error(codes.NotFound, `no invocation "inv-1" is in flight`), 404, `no invocation "inv-1" is in flight`},
		{"a wrapped gateway refusal keeps its status", fmt.Errorf("ctx: %w", New(413, "too big")), 413, "too big"},
		{"a cancelled context is 499", context.Canceled, 499, context.Canceled.Error()},
		{"an expired context is 504", context.DeadlineExceeded, 504, context.DeadlineExceeded.Error()},
		{"any other error is 500 with its text", errors.New("boom"), 500, "boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st, s := From(tc.err)
			if st != tc.status || s != tc.sentence {
				t.Fatalf("From = %d %q, want %d %q", st, s, tc.status, tc.sentence)
			}
		})
	}
}

func TestWriteAnswersWithTheEnvelope(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	Write(rec, http.StatusUnauthorized, `no "identity"`)
	if rec.Code != 401 {
		t.Fatalf("status %d", rec.Code)
	}
	if got, want := rec.Body.String(), `{"ok":false,"error":"no \"identity\""}`; got != want {
		t.Fatalf("body %s, want %s", got, want)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
	if rec.Header().Get("WWW-Authenticate") == "" {
		t.Fatal("a 401 names no authentication scheme")
	}
}
