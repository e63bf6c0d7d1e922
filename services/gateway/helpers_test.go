package gateway

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/switchboard-run/switchboard/kit/grpcclient"
	"github.com/switchboard-run/switchboard/kit/identity"
	"github.com/switchboard-run/switchboard/kit/logging"
	"github.com/switchboard-run/switchboard/kit/process"
	"github.com/switchboard-run/switchboard/services/gateway/internal/scripted"
)

// testGateway is a gateway serving on a loopback port for one test.
type testGateway struct {
	URL    string
	Client *http.Client
	cancel context.CancelFunc
	done   chan error
}

// startGateway serves a gateway in front of the backends at addr, until the
// test ends. clientTLS nil is dev mode.
func startGateway(t testing.TB, cfg Config, addr string, clientTLS *tls.Config, self identity.Self) *testGateway {
	t.Helper()
	cc, err := grpcclient.Dial(addr, clientTLS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	g, err := New(cfg, Backends{Registry: cc, Mailbox: cc, Bridge: cc, Self: self}, logging.Discard())
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tg := &testGateway{URL: "http://" + lis.Addr().String(), Client: &http.Client{}, cancel: cancel, done: make(chan error, 1)}
	go func() { tg.done <- g.Serve(ctx, lis) }()
	t.Cleanup(func() {
		cancel()
		if err := <-tg.done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return tg
}

// devGateway is a dev-mode gateway in front of scripted backends.
func devGateway(t testing.TB, reg *scripted.Registry, mb *scripted.Mailbox) *testGateway {
	t.Helper()
	addr := scripted.Serve(t, scripted.Options{Registry: reg, Mailbox: mb})
	return startGateway(t, Config{Flags: process.Flags{Security: process.Security{Dev: true}}}, addr, nil,
		identity.Self{Dev: true, Identity: devSelf})
}

// sawCaller checks that a scripted backend was called as name with grade.
func sawCaller(t *testing.T, c scripted.Call, name string, grade identity.Grade) {
	t.Helper()
	if c.Caller.Name != name || c.Caller.Grade != grade {
		t.Fatalf("%s reached the backend as %v, want %s (%s)", c.Method, c.Caller, name, grade)
	}
}

// reply is one HTTP answer.
type reply struct {
	Status int
	Header http.Header
	Body   []byte
}

// do sends one request and reads the whole answer.
func do(t testing.TB, c *http.Client, method, url string, header http.Header, body []byte) reply {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	return reply{Status: res.StatusCode, Header: res.Header, Body: b}
}

// as is the dev-mode header naming a caller.
func as(name string, grade identity.Grade) http.Header {
	return http.Header{"Switchboard-Identity": {name}, "Switchboard-Grade": {string(grade)}}
}
