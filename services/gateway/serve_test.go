package gateway

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
	"github.com/switchboard-run/switchboard/kit/identity"
	"github.com/switchboard-run/switchboard/kit/logging"
	"github.com/switchboard-run/switchboard/kit/process"
	"github.com/switchboard-run/switchboard/services/gateway/internal/bodylimit"
	"github.com/switchboard-run/switchboard/services/gateway/internal/scripted"
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

func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}

func TestAClientThatGoesAwayCancelsItsHeldRead(t *testing.T) {
	t.Parallel()
	mb, hold := newHoldingMailbox()
	g := devGateway(t, nil, mb)
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
			waitFor(t, hold.entered, "the read to reach the mailbox")
			cancel() // the HTTP client goes away mid-hold
			if err := waitFor(t, hold.released, "the mailbox to see the read end"); err == nil {
				t.Fatal("the read ended by release, not by the client leaving")
			}
			if err := waitFor(t, errc, "the client to return"); err == nil {
				t.Fatal("the cancelled request succeeded")
			}
		})
	}
}

func TestOversizeBodiesAre413OnEveryRoute(t *testing.T) {
	t.Parallel()
	g := devGateway(t, nil, &scripted.Mailbox{})
	for _, path := range []string{"/v1/act", "/v1/invocations"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			// A chunked body hides its length: the limit is met while reading.
			body := io.MultiReader(strings.NewReader(`{"op":"invoke","input":"`), io.LimitReader(zeroes{}, bodylimit.MaxBytes))
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
	g := devGateway(t, nil, nil)
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
	g := devGateway(t, nil, nil)
	h := alice.Clone()
	h.Set("X-Padding", strings.Repeat("p", 2*MaxHeaderBytes))
	res := do(t, g.Client, http.MethodPost, g.URL+"/v1/act", h, []byte(`{"op":"invocations"}`))
	if res.Status != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("HTTP %d %s, want 431", res.Status, res.Body)
	}
}

func TestShutdownLetsARequestInFlightFinish(t *testing.T) {
	t.Parallel()
	mb, hold := newHoldingMailbox()
	addr := scripted.Serve(t, scripted.Options{Mailbox: mb})
	cc := dial(t, addr)
	g, err := New(Config{Flags: process.Flags{Security: process.Security{Dev: true}}, ShutdownGrace: 20 * time.Second},
		Backends{Registry: cc, Mailbox: cc, Bridge: cc, Self: identity.Self{Dev: true, Identity: devSelf}}, logging.Discard())
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- g.Serve(ctx, lis) }()
	url := "http://" + lis.Addr().String()

	replied := make(chan reply, 1)
	go func() {
		// Not do(): a goroutine other than the test's may not t.Fatal.
		req, _ := http.NewRequest(http.MethodPost, url+"/v1/act", strings.NewReader(`{"op":"invocations"}`))
		req.Header = laptop.Clone()
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			replied <- reply{Body: []byte(err.Error())}
			return
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		replied <- reply{Status: res.StatusCode, Body: b}
	}()
	waitFor(t, hold.entered, "the read to reach the mailbox")
	cancel() // shutdown starts with the read held
	// New connections are refused once the listener is closed.
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.Dial("tcp", lis.Addr().String())
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("the gateway still accepts connections after shutdown began")
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case err := <-served:
		t.Fatalf("Serve returned (%v) with a request in flight", err)
	default:
	}
	close(hold.release)
	res := waitFor(t, replied, "the held request to answer")
	if res.Status != 200 || string(res.Body) != `{"ok":true,"kind":"invocations","rows":[]}` {
		t.Fatalf("the request in flight got HTTP %d %s", res.Status, res.Body)
	}
	if err := waitFor(t, served, "Serve to return"); err != nil {
		t.Fatalf("Serve: %v", err)
	}
}
