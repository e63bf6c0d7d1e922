package testkit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
)

// Front is a test's load balancer over HTTP replicas (gateways): each
// request goes to the next replica in turn that is not marked Down (a
// balancer's health check), and to the one after when a replica refuses
// the connection (its passive check) — no stickiness. A replica that breaks
// the connection mid-request (killed) is answered 502 with a sentence, as
// a balancer answers. It counts what each replica served.
type Front struct {
	*httptest.Server
	targets []*url.URL
	next    atomic.Uint64
	// Served counts the requests each replica answered.
	Served []atomic.Int64
	// Down marks a replica the balancer sends nothing more to.
	Down []atomic.Bool
	// Streams counts the MCP session notification streams (GET) each
	// replica opened.
	Streams []atomic.Int64
	plain   *http.Transport
}

// NewFront serves a Front over replicas (base URLs) until the test ends.
func NewFront(t TB, replicas ...string) *Front {
	t.Helper()
	f := &Front{Served: make([]atomic.Int64, len(replicas)), Down: make([]atomic.Bool, len(replicas)),
		Streams: make([]atomic.Int64, len(replicas)), plain: &http.Transport{DisableKeepAlives: true}}
	for _, r := range replicas {
		u, err := url.Parse(r)
		if err != nil {
			t.Fatal(err)
		}
		f.targets = append(f.targets, u)
	}
	f.Server = httptest.NewServer(&httputil.ReverseProxy{
		Rewrite:       func(pr *httputil.ProxyRequest) { pr.Out.URL.Scheme, pr.Out.URL.Host = "http", "replica" },
		Transport:     f,
		FlushInterval: -1,
		// A stream cut by a killed replica is expected here, not news.
		ErrorLog: log.New(io.Discard, "", 0),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			http.Error(w, fmt.Sprintf("the front got no answer from a gateway replica for %s %s: %v", r.Method, r.URL.Path, err), http.StatusBadGateway)
		},
	})
	t.Cleanup(f.Close)
	return f
}

// RoundTrip sends r to the next replica that takes the connection.
func (f *Front) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		var err error
		if body, err = io.ReadAll(r.Body); err != nil {
			return nil, err
		}
	}
	start := int(f.next.Add(1))
	var lastErr error
	for i := range f.targets {
		n := (start + i) % len(f.targets)
		if f.Down[n].Load() {
			continue
		}
		out := r.Clone(r.Context())
		out.URL.Host, out.Host = f.targets[n].Host, f.targets[n].Host
		out.Body = io.NopCloser(bytes.NewReader(body))
		res, err := f.plain.RoundTrip(out)
		if err == nil {
			f.Served[n].Add(1)
			if r.Method == http.MethodGet && r.Header.Get("Mcp-Session-Id") != "" && res.StatusCode == http.StatusOK {
				f.Streams[n].Add(1)
			}
			return res, nil
		}
		lastErr = err
		if op, ok := errors.AsType[*net.OpError](err); !ok || op.Op != "dial" {
			return nil, err
		}
	}
	if lastErr == nil {
		lastErr = errors.New("every replica is marked down")
	}
	return nil, lastErr
}
