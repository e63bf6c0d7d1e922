package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/tests/internal/procs"
)

// procSuite is the process harness: a real registry, mailbox and gateway,
// each its own process on a loopback port, in dev mode. No bridge runs:
// its address is closed.
type procSuite struct {
	url         string
	mailboxAddr string
}

func startProcSuite(t testing.TB) *procSuite {
	t.Helper()
	sp := procs.NewSplit(t, procs.Options{})
	url, _ := startGateway(t, sp)
	return &procSuite{url: url, mailboxAddr: sp.Mailboxes[0].Addr}
}

// startGateway starts a gateway process in front of sp's registry and
// first mailbox replica, its bridge address closed, and returns its URL
// once it answers.
func startGateway(t testing.TB, sp *procs.Split) (string, *testkit.Proc) {
	t.Helper()
	addr := testkit.FreeAddr(t)
	p := testkit.Start(t, testkit.Build(t, procs.Module+"services/gateway/cmd/gateway"), "--dev", "--listen", addr,
		"--registry", sp.RegAddr, "--mailbox", sp.Mailboxes[0].Addr, "--bridge", testkit.FreeAddr(t))
	url := "http://" + addr
	testkit.Eventually(t, "the gateway on "+addr+" to answer", procs.StartTimeout, func() bool {
		res, err := testkit.HTTP.Get(url + "/healthz")
		if err == nil {
			res.Body.Close()
		}
		return err == nil
	})
	return url, p
}

// party is an HTTP-only client of the gateway under one identity.
type party struct {
	url    string
	header http.Header
}

// party is a client of the suite's gateway presenting h (as, bearer).
func (s *procSuite) party(h http.Header) party {
	return party{url: s.url, header: h}
}

// send makes one request; it returns an error instead of failing the test
// so that goroutines may use it.
func (p party) send(ctx context.Context, method, path, body string) (int, string, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, p.url+path, rd)
	if err != nil {
		return 0, "", err
	}
	req.Header = p.header.Clone()
	res, err := testkit.HTTP.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, string(b), err
}

// must is send for the test goroutine: it fails unless the status is want.
func (p party) must(t testing.TB, want int, method, path, body string) string {
	t.Helper()
	st, got, err := p.send(context.Background(), method, path, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	if st != want {
		t.Fatalf("%s %s %s: HTTP %d %s, want %d", method, path, body, st, got, want)
	}
	return got
}

func (p party) act(t testing.TB, want int, body string) string {
	t.Helper()
	return p.must(t, want, http.MethodPost, "/v1/act", body)
}

// field reads one top-level string field of a JSON reply.
func field(t testing.TB, reply, name string) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(reply), &m); err != nil {
		t.Fatalf("reply %s: %v", reply, err)
	}
	var s string
	if err := json.Unmarshal(m[name], &s); err != nil {
		t.Fatalf("reply %s: field %q: %v", reply, name, err)
	}
	return s
}

// echoSchema is advertised with spacing a re-encoder would lose.
const echoSchema = `{"type": "object", "properties": {"text": {"type": "string"}}}`

// serveEcho is an HTTP-only tool host: it reads its queue with the act
// endpoint's invocations (the 30 s long poll) and completes each row with
// the row's input as stdout, until ctx ends. Each row's raw input is sent
// on rows, so the test can compare it with what the driver posted.
func serveEcho(ctx context.Context, host party, rows chan<- string, errs chan<- error) {
	for ctx.Err() == nil {
		st, body, err := host.send(ctx, http.MethodPost, "/v1/act", `{"op":"invocations"}`)
		if ctx.Err() != nil {
			return
		}
		if err != nil || st != 200 {
			errs <- fmt.Errorf("invocations: HTTP %d %s %v", st, body, err)
			return
		}
		var res struct {
			Rows []struct {
				Invocation string          `json:"invocation"`
				Input      json.RawMessage `json:"input"`
			} `json:"rows"`
		}
		if err := json.Unmarshal([]byte(body), &res); err != nil {
			errs <- fmt.Errorf("invocations reply %s: %v", body, err)
			return
		}
		for _, row := range res.Rows {
			rows <- string(row.Input)
			stdout, _ := json.Marshal(string(row.Input))
			complete := fmt.Sprintf(`{"op":"complete","invocation":%q,"capture":{"stdout":%s,"stderr":"","exit_code":0}}`, row.Invocation, stdout)
			st, body, err := host.send(ctx, http.MethodPost, "/v1/act", complete)
			want := fmt.Sprintf(`{"ok":true,"kind":"routed","invocation":%q,"capture":{"stdout":%s,"stderr":"","exit_code":0}}`, row.Invocation, stdout)
			if err != nil || st != 200 || body != want {
				errs <- fmt.Errorf("complete: HTTP %d %s %v, want %s", st, body, err, want)
				return
			}
		}
	}
}
