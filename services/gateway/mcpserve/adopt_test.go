package mcpserve

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-run/switchboard/kit/testkit"
)

// adoptFixture serves a bare MCP server's sessions the way a workspace
// does: the SDK's handler for the sessions it began, adopted for the rest.
func adoptFixture(t *testing.T, timeout time.Duration) (*adopted, *httptest.Server) {
	t.Helper()
	server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	a := newAdopted(server, timeout)
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if id := r.Header.Get("Mcp-Session-Id"); id != "" {
			a.serve(rw, r, sdk, id)
		} else {
			sdk.ServeHTTP(rw, r)
		}
	}))
	t.Cleanup(srv.Close)
	return a, srv
}

// send makes one request of session id and returns its status and body.
func send(t *testing.T, url, method, id, rev, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Mcp-Session-Id", id)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if rev != "" {
		req.Header.Set("Mcp-Protocol-Version", rev)
	}
	res, err := testkit.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	got, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(got)
}

const ping = `{"jsonrpc":"2.0","id":1,"method":"ping"}`

// A session another replica began is taken up here and answered under its
// id, up to the bound; an id or a revision a client could not have been
// given is refused with a sentence; a DELETE of a session never seen here
// takes nothing up.
func TestASessionFromAnotherReplicaIsTakenUpWithinBounds(t *testing.T) {
	t.Parallel()
	a, srv := adoptFixture(t, 0)
	a.max = 1
	if status, body := send(t, srv.URL, http.MethodDelete, "never-seen", "2025-11-25", ""); status != http.StatusNoContent || len(a.byID) != 0 {
		t.Fatalf("DELETE of a session never seen: %d %q, %d taken up; want 204 and none", status, body, len(a.byID))
	}
	if status, body := send(t, srv.URL, http.MethodPost, "from-a", "2025-11-25", ping); status != http.StatusOK || !strings.Contains(body, `"result":{}`) {
		t.Fatalf("a ping of a session begun elsewhere: %d %q; want it answered", status, body)
	}
	if status, body := send(t, srv.URL, http.MethodPost, "from-a", "2025-11-25", ping); status != http.StatusOK || !strings.Contains(body, `"result":{}`) {
		t.Fatalf("a second ping of the session taken up: %d %q", status, body)
	}
	for _, tt := range []struct {
		id, rev string
		status  int
		want    string
	}{
		{"from-b", "2025-11-25", http.StatusTooManyRequests, "has taken up 1 MCP sessions of other gateways"},
		{"bad id", "2025-11-25", http.StatusBadRequest, "holds a byte that is not visible ASCII"},
		{strings.Repeat("x", 129), "2025-11-25", http.StatusBadRequest, "is 129 bytes long; at most 128 are taken"},
		{"from-c", "yesterday", http.StatusBadRequest, `the Mcp-Protocol-Version header \"yesterday\" is not a revision of MCP`},
	} {
		status, body := send(t, srv.URL, http.MethodPost, tt.id, tt.rev, ping)
		if status != tt.status || !strings.Contains(body, tt.want) {
			t.Errorf("session %.20q, revision %q: %d %q; want %d saying %s", tt.id, tt.rev, status, body, tt.status, tt.want)
		}
	}
}

// A session taken up here ends after the idle timeout, as the SDK ends
// the sessions it began, and is forgotten.
func TestASessionTakenUpEndsWhenIdle(t *testing.T) {
	t.Parallel()
	a, srv := adoptFixture(t, 50*time.Millisecond)
	if status, body := send(t, srv.URL, http.MethodPost, "idle", "2025-11-25", ping); status != http.StatusOK {
		t.Fatalf("a ping of a session begun elsewhere: %d %q", status, body)
	}
	testkit.Eventually(t, "the idle session taken up to end", 10*time.Second, func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return len(a.byID) == 0
	})
}

// Requests of one session that arrive at once, the first this replica sees
// of it, are all served by the one session taken up: none is sent to the
// SDK's handler, which would answer 404 for a session it did not begin.
func TestRequestsAlongsideTheOneTakingASessionUpAreServed(t *testing.T) {
	t.Parallel()
	a, srv := adoptFixture(t, 0)
	for i := range 20 {
		id := fmt.Sprintf("alongside-%d", i)
		var wg sync.WaitGroup
		statuses := make([]int, 4)
		for j := range statuses {
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, j+1) // one id per request of a session
			wg.Go(func() { statuses[j], _ = send(t, srv.URL, http.MethodPost, id, "2025-11-25", body) })
		}
		wg.Wait()
		for j, status := range statuses {
			if status != http.StatusOK {
				t.Fatalf("request %d of %d sent at once for session %s: %d; want 200", j, len(statuses), id, status)
			}
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.byID) != 20 {
		t.Fatalf("%d sessions taken up; want 20, one per id", len(a.byID))
	}
}

// A session its client ended (DELETE) is refused afterwards with 404, as
// MCP asks, whether this replica began it or took it up, rather than taken
// up again; the ended sessions remembered are bounded.
func TestASessionEndedHereIsRefusedNotTakenUpAgain(t *testing.T) {
	t.Parallel()
	a, srv := adoptFixture(t, 0)
	a.max = 2
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(init))
	req.Header = http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}
	res, err := testkit.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	began := res.Header.Get("Mcp-Session-Id")
	if began == "" {
		t.Fatalf("initialize began no session (HTTP %d)", res.StatusCode)
	}
	if status, _ := send(t, srv.URL, http.MethodPost, "taken", "2025-11-25", ping); status != http.StatusOK {
		t.Fatalf("taking up a session: %d", status)
	}
	for _, id := range []string{began, "taken"} {
		if status, body := send(t, srv.URL, http.MethodDelete, id, "2025-11-25", ""); status/100 != 2 {
			t.Fatalf("DELETE of %s: %d %q", id, status, body)
		}
		want := fmt.Sprintf(`MCP session \"%s\" was ended; begin a new one with initialize`, id)
		if status, body := send(t, srv.URL, http.MethodPost, id, "2025-11-25", ping); status != http.StatusNotFound || !strings.Contains(body, want) {
			t.Fatalf("a ping of ended session %s: %d %q; want 404 saying %s", id, status, body, want)
		}
	}
	send(t, srv.URL, http.MethodDelete, "third", "2025-11-25", "")
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, kept := a.ended[began]; len(a.ended) != 2 || kept {
		t.Fatalf("ended sessions remembered: %v; want the 2 newest", a.ended)
	}
}
