package gateway_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-run/switchboard/gen"
	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/grpcserver"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/gateway"
	"github.com/switchboard-run/switchboard/tests/internal/scripted"
)

// holdingMailbox holds every invocations read until its context ends or
// release is closed, reporting both.
type holdingMailbox struct {
	entered  chan struct{}
	released chan error
	release  chan struct{}
}

func newHoldingMailbox() (*scripted.Mailbox, *holdingMailbox) {
	h := &holdingMailbox{entered: make(chan struct{}, 8), released: make(chan error, 8), release: make(chan struct{})}
	return &scripted.Mailbox{
		OnInvocations: func(ctx context.Context, _ identity.Identity, _ *mailboxv1.InvocationsRequest) (*mailboxv1.InvocationsResponse, error) {
			h.entered <- struct{}{}
			select {
			case <-ctx.Done():
				h.released <- ctx.Err()
				return nil, ctx.Err()
			case <-h.release:
				h.released <- nil
				return &mailboxv1.InvocationsResponse{}, nil
			}
		},
	}, h
}

func TestAClientThatGoesAwayCancelsItsHeldRead(t *testing.T) {
	t.Parallel()
	mb, hold := newHoldingMailbox()
	g := newSuite(t, options{scripted: &scripted.Options{Mailbox: mb}})
	for _, tc := range []struct{ name, method, path, body string }{
		{"the act endpoint", http.MethodPost, "/v1/act", `{"op":"invocations"}`},
		{"the REST route", http.MethodGet, "/v1/invocations", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			req, err := http.NewRequestWithContext(ctx, tc.method, g.URL+tc.path, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header = laptop.Clone()
			errc := make(chan error, 1)
			go func() {
				res, err := g.Client.Do(req)
				if err == nil {
					res.Body.Close()
				}
				errc <- err
			}()
			testkit.Receive(t, hold.entered, 10*time.Second, "the read to reach the mailbox")
			cancel() // the HTTP client goes away mid-hold
			if err := testkit.Receive(t, hold.released, 10*time.Second, "the mailbox to see the read end"); err == nil {
				t.Fatal("the read ended by release, not by the client leaving")
			}
			if err := testkit.Receive(t, errc, 10*time.Second, "the client to return"); err == nil {
				t.Fatal("the cancelled request succeeded")
			}
		})
	}
}

func TestOversizeBodiesAre413OnEveryRoute(t *testing.T) {
	t.Parallel()
	g := newSuite(t, options{scripted: &scripted.Options{Mailbox: &scripted.Mailbox{}}})
	for _, path := range []string{"/v1/act", "/v1/invocations"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			// A chunked body hides its length: the limit is met while reading.
			body := io.MultiReader(strings.NewReader(`{"op":"invoke","input":"`), io.LimitReader(zeroes{}, grpcserver.MaxMessageBytes))
			req, err := http.NewRequest(http.MethodPost, g.URL+path, body)
			if err != nil {
				t.Fatal(err)
			}
			req.Header = alice.Clone()
			res, err := g.Client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			got, _ := io.ReadAll(res.Body)
			if res.StatusCode != 413 || string(got) != `{"ok":false,"error":"request body is larger than 16 MiB"}` {
				t.Fatalf("HTTP %d %s", res.StatusCode, got)
			}
		})
	}
}

type zeroes struct{}

func (zeroes) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = '0'
	}
	return len(p), nil
}

func TestOpenAPIIsServedWithoutIdentity(t *testing.T) {
	t.Parallel()
	g := newSuite(t, options{scripted: &scripted.Options{}})
	res := do(t, g.Client, http.MethodGet, g.URL+"/openapi.json", nil, nil)
	if res.Status != 200 || !bytes.Equal(res.Body, gen.OpenAPI) || res.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("HTTP %d %s, %d bytes", res.Status, res.Header.Get("Content-Type"), len(res.Body))
	}
	res = do(t, g.Client, http.MethodPost, g.URL+"/openapi.json", nil, []byte("{}"))
	if res.Status != 405 || string(res.Body) != `{"ok":false,"error":"/openapi.json takes GET, not POST"}` {
		t.Fatalf("POST /openapi.json: HTTP %d %s", res.Status, res.Body)
	}
}

func TestHeadersOverTheLimitAreRefused(t *testing.T) {
	t.Parallel()
	g := newSuite(t, options{scripted: &scripted.Options{}})
	h := alice.Clone()
	h.Set("X-Padding", strings.Repeat("p", 2*gateway.MaxHeaderBytes))
	res := do(t, g.Client, http.MethodPost, g.URL+"/v1/act", h, []byte(`{"op":"invocations"}`))
	if res.Status != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("HTTP %d %s, want 431", res.Status, res.Body)
	}
}

func TestShutdownLetsARequestInFlightFinish(t *testing.T) {
	t.Parallel()
	mb, hold := newHoldingMailbox()
	g := newSuite(t, options{scripted: &scripted.Options{Mailbox: mb}, configure: func(c *gateway.Config) { c.ShutdownGrace = 20 * time.Second }})

	replied := make(chan reply, 1)
	go func() {
		// Not do(): a goroutine other than the test's may not t.Fatal.
		req, _ := http.NewRequest(http.MethodPost, g.URL+"/v1/act", strings.NewReader(`{"op":"invocations"}`))
		req.Header = laptop.Clone()
		res, err := testkit.HTTP.Do(req)
		if err != nil {
			replied <- reply{Body: []byte(err.Error())}
			return
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		replied <- reply{Status: res.StatusCode, Body: b}
	}()
	testkit.Receive(t, hold.entered, 10*time.Second, "the read to reach the mailbox")
	g.shutdown() // shutdown starts with the read held
	// New connections are refused once the listener is closed.
	testkit.Eventually(t, "the gateway to stop accepting connections after shutdown began", 5*time.Second, func() bool {
		c, err := net.Dial("tcp", strings.TrimPrefix(g.URL, "http://"))
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	select {
	case <-g.served:
		t.Fatalf("Serve returned (%v) with a request in flight", g.serveErr)
	default:
	}
	close(hold.release)
	res := testkit.Receive(t, replied, 10*time.Second, "the held request to answer")
	if res.Status != 200 || string(res.Body) != `{"ok":true,"kind":"invocations","rows":[]}` {
		t.Fatalf("the request in flight got HTTP %d %s", res.Status, res.Body)
	}
	testkit.Receive(t, g.served, 10*time.Second, "Serve to return")
	if g.serveErr != nil {
		t.Fatalf("Serve: %v", g.serveErr)
	}
}
