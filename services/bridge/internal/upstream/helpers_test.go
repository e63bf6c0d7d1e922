package upstream

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// mode is one way of reaching the conformance server.
type mode string

const (
	stdio         mode = "stdio"
	httpSession   mode = "http with sessions"
	httpStateless mode = "http stateless"
)

var modes = []mode{stdio, httpSession, httpStateless}

// eachMode runs f once per mode, in parallel.
func eachMode(t *testing.T, f func(t *testing.T, m mode)) {
	for _, m := range modes {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			f(t, m)
		})
	}
}

// events collects what a session reports, and lets a test wait for it.
type events struct {
	mu      sync.Mutex
	notices []string
	faults  []string
	tools   [][]*mcp.Tool
	changed chan struct{}
}

func newEvents() *events { return &events{changed: make(chan struct{}, 1)} }

func (e *events) poke() {
	select {
	case e.changed <- struct{}{}:
	default:
	}
}

func (e *events) options(t testing.TB) Options {
	return Options{
		Client:   "test",
		OnNotice: func(s string) { e.mu.Lock(); e.notices = append(e.notices, s); e.mu.Unlock(); e.poke() },
		OnFault:  func(s string) { e.mu.Lock(); e.faults = append(e.faults, s); e.mu.Unlock(); e.poke() },
		OnTools:  func(ts []*mcp.Tool) { e.mu.Lock(); e.tools = append(e.tools, ts); e.mu.Unlock(); e.poke() },
	}
}

// await waits until cond holds over the collected events.
func (e *events) await(t *testing.T, what string, cond func(e *events) bool) {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		e.mu.Lock()
		ok := cond(e)
		e.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-e.changed:
		case <-deadline:
			e.mu.Lock()
			defer e.mu.Unlock()
			t.Fatalf("timed out waiting for %s; notices %q, faults %q", what, e.notices, e.faults)
		}
	}
}

func hasPrefix(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

func stdioConfig(bin string, args ...string) *bridgev1.ServerConfig {
	return &bridgev1.ServerConfig{Transport: &bridgev1.ServerConfig_Stdio{Stdio: &bridgev1.StdioTransport{Command: bin, Args: args}}}
}

func httpConfig(url string, headers map[string]string) *bridgev1.ServerConfig {
	return &bridgev1.ServerConfig{Transport: &bridgev1.ServerConfig_Http{Http: &bridgev1.HttpTransport{Url: url, Headers: headers}}}
}

// conformance opens a session with the SDK's conformance everything-server
// in the given mode, started for this test alone.
func conformance(t *testing.T, m mode, opts Options) (*Session, *bridgev1.ServerConfig) {
	t.Helper()
	bin := testkit.Tool(t, "everything-server")
	var cfg *bridgev1.ServerConfig
	switch m {
	case stdio:
		cfg = stdioConfig(bin)
	case httpSession:
		addr := testkit.FreeAddr(t)
		testkit.StartHTTP(t, bin, addr, "-stateless=false")
		cfg = httpConfig("http://"+addr+"/", nil)
	case httpStateless:
		addr := testkit.FreeAddr(t)
		testkit.StartHTTP(t, bin, addr)
		cfg = httpConfig("http://"+addr+"/", nil)
	}
	return open(t, cfg, opts), cfg
}

func open(t *testing.T, cfg *bridgev1.ServerConfig, opts Options) *Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Open(ctx, cfg, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func toolNames(tools []*mcp.Tool) map[string]bool {
	m := map[string]bool{}
	for _, t := range tools {
		m[t.Name] = true
	}
	return m
}
