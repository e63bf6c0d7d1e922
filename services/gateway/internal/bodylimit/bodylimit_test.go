package bodylimit

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// echoLimit reads the whole body and reports the outcome as the test sees it.
func echoLimit(w http.ResponseWriter, r *http.Request) {
	n, err := io.Copy(io.Discard, r.Body)
	switch {
	case IsTooLarge(err) && Exceeded(r.Context()):
		w.WriteHeader(http.StatusRequestEntityTooLarge)
	case err != nil:
		w.WriteHeader(http.StatusInternalServerError)
	default:
		_, _ = io.WriteString(w, strings.Repeat("x", int(n%7)))
	}
}

func TestBodiesAreCutAtTheLimit(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(Wrap(http.HandlerFunc(echoLimit)))
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		name    string
		size    int64
		chunked bool
		want    int
	}{
		{"a body of exactly the limit is read", MaxBytes, false, 200},
		{"a declared length over the limit is refused before reading", MaxBytes + 1, false, 413},
		{"a chunked body over the limit is cut while reading", MaxBytes + 1, true, 413},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var body io.Reader = io.LimitReader(zeros{}, tc.size)
			if tc.chunked {
				body = struct{ io.Reader }{body} // hides the length
			}
			req, err := http.NewRequest(http.MethodPost, srv.URL, body)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.chunked {
				req.ContentLength = tc.size
			}
			res, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			got, _ := io.ReadAll(res.Body)
			if res.StatusCode != tc.want {
				t.Fatalf("status %d, want %d (%s)", res.StatusCode, tc.want, got)
			}
			if tc.want == 413 && !tc.chunked && string(got) != `{"ok":false,"error":"request body is larger than 16 MiB"}` {
				t.Fatalf("body %s", got)
			}
		})
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = '0'
	}
	return len(p), nil
}
