package gateway_test

import (
	"bufio"
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-run/switchboard/kit/suite/identity"
)

// The console's handler tests: every page and fragment over the real
// gateway and backends, as a browser's script would ask for them.

// liveWait bounds a wait for a live view's event: a hang guard, not a
// timing assertion (events arrive within milliseconds).
const liveWait = 30 * time.Second

// consoleGet fetches a console fragment as who.
func (s *suite) consoleGet(t testing.TB, path string, who http.Header) reply {
	t.Helper()
	return do(t, s.Client, http.MethodGet, s.URL+path, who, nil)
}

// consolePost submits a console form as who.
func (s *suite) consolePost(t testing.TB, path string, who http.Header, form url.Values) reply {
	t.Helper()
	h := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
	for k, v := range who {
		h[k] = v
	}
	return do(t, s.Client, http.MethodPost, s.URL+path, h, []byte(form.Encode()))
}

// sse is an open console event stream.
type sse struct {
	sc     *bufio.Scanner
	cancel context.CancelFunc
}

// consoleLive opens a console event stream as who, failing unless the
// gateway answers with one.
func (s *suite) consoleLive(t testing.TB, path string, who http.Header) *sse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), liveWait)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = who.Clone()
	res, err := s.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); res.Body.Close() })
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET %s = %d %s, want an event stream", path, res.StatusCode, res.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	return &sse{sc: sc, cancel: cancel}
}

// next reads one event: its name and its data lines joined.
func (e *sse) next(t testing.TB) (string, string) {
	t.Helper()
	var name string
	var data []string
	for e.sc.Scan() {
		line := e.sc.Text()
		switch {
		case line == "" && name != "":
			return name, strings.Join(data, "\n")
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = append(data, strings.TrimPrefix(line, "data: "))
		}
	}
	t.Fatalf("the event stream ended (%v) before the awaited event", e.sc.Err())
	return "", ""
}

// until reads events until one named name satisfies ok, and returns its
// data.
func (e *sse) until(t testing.TB, name string, ok func(string) bool) string {
	t.Helper()
	for {
		n, data := e.next(t)
		if n == name && ok(data) {
			return data
		}
	}
}

// contains is a predicate for until.
func contains(parts ...string) func(string) bool {
	return func(s string) bool {
		for _, p := range parts {
			if !strings.Contains(s, p) {
				return false
			}
		}
		return true
	}
}

// mustStatus fails unless r has the status and its body holds every part.
func mustStatus(t testing.TB, what string, r reply, status int, parts ...string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("%s = %d, want %d: %s", what, r.Status, status, r.Body)
	}
	for _, p := range parts {
		if !strings.Contains(string(r.Body), p) {
			t.Fatalf("%s lacks %q:\n%s", what, p, r.Body)
		}
	}
}

// The callers the console tests sign in as (dev mode headers).
var (
	opsHeader   = as("ops", identity.Admin)
	aliceHeader = as("alice", identity.Driver)
)
