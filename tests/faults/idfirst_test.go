package faults

import (
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
		res, err := http.DefaultClient.Do(req)
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
	res, err := http.DefaultClient.Do(req)
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
