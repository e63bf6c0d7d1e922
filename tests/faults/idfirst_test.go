package faults

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/tests/internal/procs"
)

// handleHeader names a REST call's handle, in its 103 and its answer.
const handleHeader = "Grpc-Metadata-Switchboard-Invocation"

// A REST POST /v1/call names its handle in a 103 Early Hints response as
// soon as the mailbox takes the call, before the tool answers: a client
// whose connection breaks while the tool runs collects the capture by it,
// and one that waits gets the answer naming the same handle once.
func TestARESTCallNamesItsHandleBeforeItWaits(t *testing.T) {
	t.Parallel()
	dir, gwAddr := slowWorker(t, procs.NewSplit(t, procs.Options{}))
	base := "http://" + gwAddr

	// The first call's client goes away while the tool runs.
	ctx, hangUp := context.WithCancel(context.Background())
	named, answered := namedCall(t, ctx, base)
	id := receive(t, named, "a 103 naming the handle")
	select {
	case a := <-answered:
		t.Fatalf("answered %q before the tool finished", a)
	default:
	}
	hangUp()
	receive(t, answered, "the broken call to return")
	// The gateway's Call waits on until it sees its client gone, and could
	// meanwhile take the capture collected below: wait for it to end.
	testkit.Eventually(t, "the gateway to end the broken call", procs.StartTimeout, func() bool {
		return testkit.Scrape(t, base+"/metrics", nil, nil).Value("switchboard_http_requests_total", "method", http.MethodPost) >= 1
	})
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	res := driverRequest(t, http.MethodGet, base+"/v1/invocations/"+id+"/capture?wait=60s", "")
	if !strings.Contains(res, `"stdout":"done\n"`) {
		t.Fatalf("collecting %s by its handle answered %s; want its capture", id, res)
	}

	// The second waits for its answer, which names the handle the 103 did.
	named, answered = namedCall(t, context.Background(), base)
	id = receive(t, named, "a 103 naming the second handle")
	if a := receive(t, answered, "the second call's answer"); a != "200 "+id+" 1" {
		t.Fatalf("the answer was %q; want 200 naming %s once", a, id)
	}
}

// namedCall posts a call of worker_slow as the driver; named receives the
// handle its 103 names, answered "<status> <handle header> <its count>".
func namedCall(t *testing.T, ctx context.Context, base string) (named, answered chan string) {
	named, answered = make(chan string, 1), make(chan string, 1)
	trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
		if code == http.StatusEarlyHints {
			named <- h.Get(handleHeader)
		}
		return nil
	}}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodPost, base+"/v1/call",
		strings.NewReader(`{"client":"worker","tool":"slow","input":"{}"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = asDriver.Clone()
	go func() {
		res, err := testkit.HTTP.Do(req)
		if err != nil {
			answered <- "error: " + err.Error()
			return
		}
		defer res.Body.Close()
		_, _ = io.Copy(io.Discard, res.Body)
		ids := res.Header.Values(handleHeader)
		answered <- strings.Join([]string{res.Status[:3], strings.Join(ids, ","), strconv.Itoa(len(ids))}, " ")
	}()
	return named, answered
}

// driverRequest sends body to url as the driver, and returns the status
// and the reply's body.
func driverRequest(t *testing.T, method, url, body string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = asDriver.Clone()
	res, err := testkit.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	return res.Status[:3] + " " + string(out)
}

func receive(t *testing.T, ch chan string, what string) string {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-t.Context().Done():
	case <-time.After(procs.StartTimeout):
	}
	t.Fatalf("no %s within %v", what, procs.StartTimeout)
	return ""
}

// A stateless-era MCP tools/call that runs on names its invocation before
// it is answered: in the Switchboard-Invocation header of the SSE answer,
// flushed with a comment line saying the same. Its gateway killed (-9)
// while the tool runs, the client collects the capture by that name
// through another gateway; a call that waits gets the comment, then the
// result, on one stream.
func TestAnMCPCallNamesItsInvocationBeforeItWaits(t *testing.T) {
	t.Parallel()
	s := procs.NewSplit(t, procs.Options{})
	dir, addrB := slowWorker(t, s)
	addrA := testkit.FreeAddr(t)
	gwA := s.Gateway(addrA, s.RegAddr)
	goFile := filepath.Join(dir, "go")

	for _, killed := range []bool{true, false} {
		base := "http://" + addrB
		if killed {
			base = "http://" + addrA
		}
		res := statelessCall(t, base)
		defer res.Body.Close()
		id := res.Header.Get("Switchboard-Invocation")
		body := bufio.NewReader(res.Body)
		line, err := body.ReadString('\n')
		if !strings.HasPrefix(id, "inv-") || err != nil || line != ": invocation "+id+"\n" {
			t.Fatalf("the answer began with header %q and line %q (%v); want the invocation named in both", id, line, err)
		}
		if killed {
			gwA.Kill()
		}
		if err := os.WriteFile(goFile, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if killed {
			capture := driverRequest(t, http.MethodGet, "http://"+addrB+"/v1/invocations/"+id+"/capture?wait=60s", "")
			if !strings.Contains(capture, `"stdout":"done\n"`) {
				t.Fatalf("collecting %s through the other gateway answered %s; want its capture", id, capture)
			}
		} else {
			rest, err := io.ReadAll(body)
			if err != nil || !strings.HasPrefix(string(rest), "\nevent: message\ndata: ") || !strings.Contains(string(rest), `"text":"done\n"`) {
				t.Fatalf("after the name, the waiting call answered %q (%v); want the result", rest, err)
			}
		}
		if err := os.Remove(goFile); err != nil {
			t.Fatal(err)
		}
	}
}

// statelessCall posts a plain stateless-era tools/call of worker_slow to
// the MCP endpoint at base as the driver, and returns the response once
// its headers have come.
func statelessCall(t *testing.T, base string) *http.Response {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"worker_slow","arguments":{},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = asDriver.Clone()
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "worker_slow"} {
		req.Header.Set(k, v)
	}
	res, err := testkit.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		out, _ := io.ReadAll(res.Body)
		res.Body.Close()
		t.Fatalf("tools/call answered %s %s", res.Status, out)
	}
	return res
}
