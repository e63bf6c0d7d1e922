package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/gateway"
)

// post sends body as name (a driver, the dev header) and returns the reply.
func (s *suite) postAs(t testing.TB, name, path, body string) reply {
	t.Helper()
	h := as(name, identity.Driver)
	h.Set("Content-Type", "application/json")
	return do(t, s.Client, http.MethodPost, s.URL+path, h, []byte(body))
}

// refusalsMetric counts the calls the limits refused, by grade and limit
// ("rate" or "in_flight"): the names docs/observability.md gives users.
const refusalsMetric = "switchboard_call_limit_refusals_total"

// A burst past an identity's rate is refused with 429, the sentence and
// Retry-After on every call route, while another identity's calls go
// through; routes that are not calls are not counted.
func TestCallRateIsPerIdentity(t *testing.T) {
	t.Parallel()
	// One call per 1000 s, bursts of 3: the bucket does not refill while
	// the test runs.
	s := newSuite(t, options{laptop: true, configure: func(c *gateway.Config) {
		c.Limits = gateway.LimitFlags{Rate: "driver=0.001", Burst: "driver=3", MaxCallers: 100}
	}})
	const invoke = `{"client":"laptop","tool":"cat","input":"{}"}`
	// Not calls: a listing and an act that is not invoke.
	for range 5 {
		if rep := do(t, s.Client, http.MethodGet, s.URL+"/v1/workspaces/default/tools", as("alice", identity.Driver), nil); rep.Status != http.StatusOK {
			t.Fatalf("listing: HTTP %d %s", rep.Status, rep.Body)
		}
	}
	// The burst: one call on each route.
	if rep := s.postAs(t, "alice", "/v1/invocations", invoke); rep.Status != http.StatusOK {
		t.Fatalf("REST invoke: HTTP %d %s", rep.Status, rep.Body)
	}
	if rep := s.postAs(t, "alice", "/v1/act", `{"op":"invoke","client":"laptop","tool":"cat","input":{}}`); rep.Status != http.StatusOK {
		t.Fatalf("act invoke: HTTP %d %s", rep.Status, rep.Body)
	}
	cs := s.connect(t, "/mcp", as("alice", identity.Driver), nil)
	if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "laptop_cat", Arguments: map[string]any{}}); err != nil || res.IsError {
		t.Fatalf("MCP call: %v, %v", res, err)
	}
	// The bucket refills by a thousandth of a call each second, so the wait
	// is a little under 1000 s by the time the test asks; the sentence
	// names the wait Retry-After gives.
	for _, c := range []struct{ path, body string }{
		{"/v1/invocations", invoke},
		{"/v1/call", invoke},
		{"/v1/act", `{"op":"invoke","client":"laptop","tool":"cat","input":{}}`},
	} {
		rep := s.postAs(t, "alice", c.path, c.body)
		after, err := strconv.Atoi(rep.Header.Get("Retry-After"))
		sentence := fmt.Sprintf(`"alice" made more than 0.001 calls per second (bursts of 3), the rate a driver may call at; try again in %d s`, after)
		if rep.Status != http.StatusTooManyRequests || err != nil || after < 900 || after > 1000 || envelopeError(rep.Body) != sentence {
			t.Fatalf("%s past the burst: HTTP %d Retry-After %q %s", c.path, rep.Status, rep.Header.Get("Retry-After"), rep.Body)
		}
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "laptop_cat", Arguments: map[string]any{}}); err == nil {
		t.Fatal("an MCP call past the burst went through")
	}
	// Each refusal is counted, by grade and limit: three REST and act
	// calls and the MCP call.
	if m := testkit.Scrape(t, s.URL+"/metrics", nil, nil); m.Value(refusalsMetric, "grade", "driver", "limit", "rate") != 4 ||
		m.Value(refusalsMetric, "limit", "in_flight") != 0 {
		t.Fatalf("refusals counted: %v by rate, %v in flight, want 4 and 0", m.Value(refusalsMetric, "limit", "rate"), m.Value(refusalsMetric, "limit", "in_flight"))
	}
	// The session itself still answers what is not a call.
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		t.Fatalf("listing past the burst: %v", err)
	}
	// Bob has his own bucket.
	if rep := s.postAs(t, "bob", "/v1/invocations", invoke); rep.Status != http.StatusOK {
		t.Fatalf("bob: HTTP %d %s", rep.Status, rep.Body)
	}
}

// A call past an identity's calls in flight is refused the same way,
// while another identity's go through; the slot frees when the call ends.
func TestCallsInFlightArePerIdentity(t *testing.T) {
	t.Parallel()
	s := newSuite(t, options{laptop: true, configure: func(c *gateway.Config) {
		c.Limits = gateway.LimitFlags{Concurrent: "1", MaxCallers: 100}
	}})
	slow := s.waiter(t, "slowbox")
	cs := s.connect(t, "/mcp", as("alice", identity.Driver), nil)
	done := make(chan error, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "slowbox_wait", Arguments: map[string]any{}})
		if err == nil && res.IsError {
			err = errorText(texts(res))
		}
		done <- err
	}()
	inv := testkit.Receive(t, slow.invocations, 10*time.Second, "the host to be handed alice's call")
	const invoke = `{"client":"laptop","tool":"cat","input":"{}"}`
	rep := s.postAs(t, "alice", "/v1/invocations", invoke)
	if rep.Status != http.StatusTooManyRequests || rep.Header.Get("Retry-After") != "1" ||
		envelopeError(rep.Body) != `"alice" already has 1 calls in flight, the most a driver may have at once; wait for one to end` {
		t.Fatalf("a second call in flight: HTTP %d Retry-After %q %s", rep.Status, rep.Header.Get("Retry-After"), rep.Body)
	}
	if m := testkit.Scrape(t, s.URL+"/metrics", nil, nil); m.Value(refusalsMetric, "grade", "driver", "limit", "in_flight") != 1 ||
		m.Value(refusalsMetric, "limit", "rate") != 0 {
		t.Fatalf("refusals counted: %v in flight, %v by rate, want 1 and 0", m.Value(refusalsMetric, "limit", "in_flight"), m.Value(refusalsMetric, "limit", "rate"))
	}
	if rep := s.postAs(t, "bob", "/v1/invocations", invoke); rep.Status != http.StatusOK {
		t.Fatalf("bob: HTTP %d %s", rep.Status, rep.Body)
	}
	if _, err := s.Mailbox.Complete(testkit.As("slowbox", identity.Host), answer(inv.GetInvocation(), "done\n")); err != nil {
		t.Fatal(err)
	}
	if err := testkit.Receive(t, done, 10*time.Second, "alice's call to end"); err != nil {
		t.Fatal(err)
	}
	// The MCP request has ended once its answer is read; the release
	// follows the handler's return, so the next call may race it by a
	// moment: wait for the slot rather than for time.
	testkit.Eventually(t, "alice's slot to come free", 10*time.Second, func() bool {
		rep := s.postAs(t, "alice", "/v1/invocations", invoke)
		if rep.Status != http.StatusOK && rep.Status != http.StatusTooManyRequests {
			t.Fatalf("after the call ended: HTTP %d %s", rep.Status, rep.Body)
		}
		return rep.Status == http.StatusOK
	})
}

type errorText []string

func (e errorText) Error() string { return "the call answered an error: " + e[0] }
