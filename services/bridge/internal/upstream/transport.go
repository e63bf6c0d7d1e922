package upstream

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-run/switchboard/services/bridge/internal/child"
	mcpstdio "github.com/switchboard-run/switchboard/services/bridge/internal/stdio"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
)

// terminateAfter is how long closing a stdio server waits for it to exit on
// its own (after its stdin closes) before SIGTERM, and again before SIGKILL.
const terminateAfter = 2 * time.Second

// transport builds the SDK transport for cfg. For stdio it also returns the
// command, whose process is the server.
func transport(cfg *bridgev1.ServerConfig, stderr io.Writer) (mcp.Transport, *exec.Cmd, error) {
	switch t := cfg.GetTransport().(type) {
	case *bridgev1.ServerConfig_Stdio:
		return stdioTransport(t.Stdio, stderr)
	case *bridgev1.ServerConfig_Http:
		endpoint, err := url.Parse(t.Http.GetUrl())
		if err != nil {
			return nil, nil, fmt.Errorf("url %q: %w", t.Http.GetUrl(), err)
		}
		home := originOf(endpoint)
		return &mcp.StreamableClientTransport{
			Endpoint: t.Http.GetUrl(),
			HTTPClient: &http.Client{
				Transport:     &withHeaders{headers: t.Http.GetHeaders(), origin: home, base: http.DefaultTransport},
				CheckRedirect: stayWithin(home),
			},
		}, nil, nil
	}
	return nil, nil, errors.New("the config names no MCP transport (stdio or http)")
}

func stdioTransport(s *bridgev1.StdioTransport, stderr io.Writer) (mcp.Transport, *exec.Cmd, error) {
	if s.GetCommand() == "" {
		return nil, nil, errors.New("the command is empty")
	}
	cmd := child.Command(append([]string{s.GetCommand()}, s.GetArgs()...), s.GetEnv(), s.GetCwd(), stderr, terminateAfter)
	if cmd.Err != nil {
		return nil, nil, fmt.Errorf("cannot run %q: %w", s.GetCommand(), cmd.Err)
	}
	// stderr is the server's log: kept as a tail, never read as an error.
	return &mcpstdio.Transport{Command: cmd, TerminateDuration: terminateAfter, DecodeToolResults: true}, cmd, nil
}

// maxRedirects bounds a chain of redirects within the origin, as Go's
// client does by default.
const maxRedirects = 10

// stayWithin follows a redirect only within the configured origin: the
// request carries the server's credentials, and the body a tool call's
// input, neither of which is for anyone else (docs/security.md).
func stayWithin(home string) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if o := originOf(req.URL); o != home {
			return fmt.Errorf("%s redirected the bridge to %s, another origin: the bridge sends this server's credentials only to %s and follows no redirect elsewhere",
				via[len(via)-1].URL.Redacted(), req.URL.Redacted(), home)
		}
		if len(via) >= maxRedirects {
			return fmt.Errorf("%s redirected the bridge %d times; giving up", via[0].URL.Redacted(), len(via))
		}
		return nil
	}
}

// originOf is u's scheme://host:port, lower case, with the scheme's default
// port written out, so that two spellings of one origin compare equal.
func originOf(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
	}
	return strings.ToLower(u.Scheme + "://" + net.JoinHostPort(u.Hostname(), port))
}

// withHeaders adds the configured headers to every request the SDK makes
// to the configured origin, and to no other: they are the bridge's own
// upstream credentials, never a driver's. The SDK's own headers (session
// id, protocol version) are never replaced.
type withHeaders struct {
	headers map[string]string
	origin  string
	base    http.RoundTripper
}

func (w *withHeaders) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(w.headers) == 0 || originOf(req.URL) != w.origin {
		return w.base.RoundTrip(req)
	}
	req = req.Clone(req.Context()) // a RoundTripper must not modify its request
	for k, v := range w.headers {
		if req.Header.Get(k) == "" {
			req.Header.Set(k, v)
		}
	}
	return w.base.RoundTrip(req)
}
