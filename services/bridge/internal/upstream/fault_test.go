package upstream

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-run/switchboard/kit/testkit"
)

func TestKilledStdioServerEndsTheSession(t *testing.T) {
	t.Parallel()
	s, _ := conformance(t, stdio, newEvents().options(t))
	pid := s.PID()
	if pid == 0 {
		t.Fatal("no process id for a stdio server")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the session did not end after kill -9")
	}
	if err := s.Err(); err == nil || err.Error() != "the server process exited (signal: killed)" {
		t.Errorf("Err() = %v, want the process's end named", err)
	}
}

func TestRestartedHTTPServerIsReinitialisedAndTheCallRetried(t *testing.T) {
	t.Parallel()
	bin := testkit.Tool(t, "everything-server")
	addr := testkit.FreeAddr(t)
	first := testkit.StartHTTP(t, bin, addr, "-stateless=false")
	ev := newEvents()
	s := open(t, httpConfig("http://"+addr+"/", nil), ev.options(t))
	before := s.Info().SessionID
	if before == "" {
		t.Fatal("no session id from a server with sessions")
	}

	first.Kill()
	second := testkit.StartHTTP(t, bin, addr, "-stateless=false") // same port, no memory of the session

	got := call(t, s, "test_simple_text", `{}`)
	if got.GetExitCode() != 0 || got.GetStdout() != "This is a simple text response for testing." {
		t.Fatalf("the call after the restart = %v", got)
	}
	after := s.Info().SessionID
	if after == "" || after == before {
		t.Errorf("session id %q → %q, want a new one", before, after)
	}
	ev.await(t, "the re-initialisation fault and a re-listing", func(e *events) bool {
		return hasPrefix(e.faults, "the HTTP session "+before+" expired (the server answered 404); re-initialised as") &&
			len(e.tools) > 0 && toolNames(e.tools[len(e.tools)-1])["test_simple_text"]
	})
	select {
	case <-s.Done():
		t.Fatalf("the session ended instead of re-initialising: %v", s.Err())
	default:
	}

	// Without a call, the SDK's standalone stream meets the 404 on its own
	// reconnect, and the session is re-initialised all the same.
	second.Kill()
	testkit.StartHTTP(t, bin, addr, "-stateless=false")
	ev.await(t, "a second re-initialisation, with no call to meet the 404", func(e *events) bool {
		return hasPrefix(e.faults, "the HTTP session "+after+" expired")
	})
	if got := call(t, s, "test_simple_text", `{}`); got.GetExitCode() != 0 {
		t.Errorf("the call after the second restart = %v", got)
	}
}

// headerLog is a real reverse proxy in front of the real server that keeps
// the headers of every request it forwards.
type headerLog struct {
	mu      sync.Mutex
	headers []http.Header
	methods []string
}

func (h *headerLog) all() ([]http.Header, []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]http.Header(nil), h.headers...), append([]string(nil), h.methods...)
}

func TestConfiguredHeadersGoOnEveryRequest(t *testing.T) {
	t.Parallel()
	front, log := recorder(t)

	s := open(t, httpConfig(front.URL+"/", map[string]string{"Authorization": "Bearer bridge-own-secret", "X-Team": "infra"}), newEvents().options(t))
	if _, err := s.Call(context.Background(), "test_simple_text", json.RawMessage(`{}`), nil, "", nil); err != nil {
		t.Fatal(err)
	}
	s.Close() // ends the session with DELETE

	seen, methods := log.all()
	if len(seen) < 3 {
		t.Fatalf("only %d requests went through the proxy", len(seen))
	}
	sawSession := false
	for i, h := range seen {
		if h.Get("Authorization") != "Bearer bridge-own-secret" || h.Get("X-Team") != "infra" {
			t.Errorf("request %d lacks the configured headers: %v", i, h)
		}
		if h.Get("Mcp-Session-Id") != "" {
			sawSession = true
		}
	}
	for _, h := range seen {
		if strings.Contains(strings.Join(h.Values("Mcp-Session-Id"), ","), ",") {
			t.Errorf("the session header was doubled: %v", h.Values("Mcp-Session-Id"))
		}
	}
	if !sawSession {
		t.Error("no request carried the SDK's Mcp-Session-Id")
	}
	if methods[len(methods)-1] != http.MethodDelete {
		t.Errorf("requests %v: closing did not end the session with DELETE", methods)
	}
}
