package gateway_test

import (
	"bytes"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-run/switchboard/kit/suite/identity"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden from what the gateway answers")

// handle stands in a golden for the first invocation handle it shows, and
// names a handle nobody posted in the cases that never reach the mailbox.
const handle = "inv-0a1b2c3d4e5f60718293a4b5c6d7e8f9"

// goldenCase is one request and the bytes of its answer in
// testdata/golden/<name>.golden.
type goldenCase struct {
	name   string
	method string // default POST
	path   string // default /v1/act
	header http.Header
	body   string
	// setup brings the real services to the state the request meets, with
	// the calls the parties would make.
	setup func(*testing.T, *suite)
	// during runs beside the request, for a state change the request must
	// be in flight to see. It runs on its own goroutine: it reports with
	// t.Error, never t.Fatal.
	during func(*testing.T, *suite)
	// check looks at the services afterwards, for what the reply alone
	// cannot show (what was stored, under whose name).
	check func(*testing.T, *suite, reply)
}

var (
	laptop = as("laptop", identity.Host)
	alice  = as("alice", identity.Driver)
)

func TestActRepliesMatchTheirGoldens(t *testing.T) {
	t.Parallel()
	var cases []goldenCase
	cases = append(cases, opCases()...)
	cases = append(cases, refusalCases()...)
	cases = append(cases, restCases()...)
	names := map[string]bool{}
	for _, tc := range cases {
		if names[tc.name] {
			t.Fatalf("two cases named %q", tc.name)
		}
		names[tc.name] = true
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			from := time.Now()
			b := newSuite(t, options{})
			if tc.setup != nil {
				tc.setup(t, b)
			}
			method, path, body := tc.method, tc.path, tc.body
			if method == "" {
				method = http.MethodPost
			}
			if path == "" {
				path = "/v1/act"
			}
			if b.inv != "" {
				path = strings.ReplaceAll(path, handle, b.inv)
				body = strings.ReplaceAll(body, handle, b.inv)
			}
			var sent []byte
			if body != "" {
				sent = []byte(body)
			}
			beside := make(chan struct{})
			go func() {
				defer close(beside)
				if tc.during != nil {
					tc.during(t, b)
				}
			}()
			// during may not outlive the test, even one that fails.
			awaitBeside := sync.OnceFunc(func() { <-beside })
			defer awaitBeside()
			res := do(t, b.Client, method, b.URL+path, tc.header, sent)
			awaitBeside()
			got, err := normalise(goldenText(method, path, tc.header, body, res), from)
			if err != nil {
				t.Fatal(err)
			}
			compareGolden(t, tc.name, got)
			if ct := res.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q, want application/json", ct)
			}
			if tc.check != nil {
				tc.check(t, b, res)
			}
		})
	}
}

// goldenText is what a golden file holds: the request, then the status and
// the body exactly as sent.
func goldenText(method, path string, h http.Header, body string, res reply) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s\n", method, path)
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range h[k] {
			fmt.Fprintf(&b, "%s: %s\n", k, v)
		}
	}
	if len(body) > 4096 {
		body = fmt.Sprintf("<%d bytes>", len(body))
	}
	fmt.Fprintf(&b, "\n%s\n---\nHTTP %d\n%s\n", body, res.Status, res.Body)
	return b.String()
}

var (
	// handleRE is a handle as the mailbox mints it: inv- and 128 bits.
	handleRE = regexp.MustCompile(`inv-[0-9a-f]{32}`)
	// lastSeenRE is a client row's last_seen, in the act and REST shapes.
	lastSeenRE = regexp.MustCompile(`"last_seen":"([^"]*)"`)
	// noteAtRE is a progress note's time, or a status's post time, in the
	// REST shape; expiresInRE a status's time left, in the REST and act
	// shapes.
	noteAtRE    = regexp.MustCompile(`"(at|posted)":"([^"]*)"`)
	expiresInRE = regexp.MustCompile(`"expires_in":"([^"]*)"`)
	// standIns replace a golden's handles, in order of first appearance.
	standIns = []string{handle, "inv-ffeeddccbbaa99887766554433221100"}
)

// seenAt replaces every last_seen time in a golden, and every note's time.
const seenAt = "2026-03-14T14:09:26.535897Z"

// expiresIn replaces every time left of a status that is within the
// suite's TTL (an hour).
const expiresIn = "3600s"

// normalise makes a golden's text the same on every run: each distinct
// handle becomes a stand-in in order of first appearance; a last_seen taken
// since from becomes seenAt (other values, a note's `at` and a status's
// `posted` stay, so the comparison shows them); an expires_in of at most an
// hour becomes expiresIn. Every other byte is kept: key order, escapes,
// spacing, numbers.
func normalise(text string, from time.Time) (string, error) {
	seen := map[string]string{}
	var tooMany error
	text = handleRE.ReplaceAllStringFunc(text, func(h string) string {
		if s, ok := seen[h]; ok {
			return s
		}
		if len(seen) == len(standIns) {
			tooMany = fmt.Errorf("the golden shows more than %d handles; add a stand-in", len(standIns))
			return h
		}
		seen[h] = standIns[len(seen)]
		return seen[h]
	})
	text = lastSeenRE.ReplaceAllStringFunc(text, func(m string) string {
		at, err := time.Parse(time.RFC3339Nano, lastSeenRE.FindStringSubmatch(m)[1])
		if err != nil || at.Before(from.Truncate(time.Second)) || at.After(time.Now()) {
			return m
		}
		return `"last_seen":"` + seenAt + `"`
	})
	text = noteAtRE.ReplaceAllStringFunc(text, func(m string) string {
		sub := noteAtRE.FindStringSubmatch(m)
		at, err := time.Parse(time.RFC3339Nano, sub[2])
		if err != nil || at.Before(from.Truncate(time.Second)) || at.After(time.Now()) {
			return m
		}
		return `"` + sub[1] + `":"` + seenAt + `"`
	})
	text = expiresInRE.ReplaceAllStringFunc(text, func(m string) string {
		d, err := time.ParseDuration(expiresInRE.FindStringSubmatch(m)[1])
		if err != nil || d <= 0 || d > time.Hour {
			return m
		}
		return `"expires_in":"` + expiresIn + `"`
	})
	return text, tooMany
}

func compareGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name+".golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run TestActRepliesMatchTheirGoldens -update to write it)", err)
	}
	if !bytes.Equal([]byte(got), want) {
		t.Fatalf("%s differs\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestNormaliseReplacesOnlyHandlesAndFreshTimes(t *testing.T) {
	t.Parallel()
	from := time.Now()
	fresh := time.Now().UTC().Format(time.RFC3339Nano)
	a, b := "inv-"+strings.Repeat("1", 32), "inv-"+strings.Repeat("2", 32)
	for _, tc := range []struct{ name, in, want, err string }{
		{"one handle shown twice stays one", `"` + a + `" ` + a, `"` + handle + `" ` + handle, ""},
		{"two handles stay two, in order of appearance", b + " " + a + " " + b, standIns[0] + " " + standIns[1] + " " + standIns[0], ""},
		{"a third handle is an error, not a collision", a + b + " inv-" + strings.Repeat("3", 32), "", "more than 2 handles"},
		{"a handle of another shape is kept", "inv-1234 inv-" + strings.Repeat("A", 32), "inv-1234 inv-" + strings.Repeat("A", 32), ""},
		{"a fresh last_seen becomes seenAt", `{"last_seen":"` + fresh + `","n":1.50}`, `{"last_seen":"` + seenAt + `","n":1.50}`, ""},
		{"a last_seen from before the case is kept", `"last_seen":"2001-02-03T04:05:06Z"`, `"last_seen":"2001-02-03T04:05:06Z"`, ""},
		{"a last_seen that is not RFC 3339 is kept", `"last_seen":"yesterday"`, `"last_seen":"yesterday"`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := normalise(tc.in, from)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("normalise(%q) = %q, %v; want an error saying %q", tc.in, got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("normalise(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
}
