package upstream

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-run/switchboard/services/bridge/internal/child"

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
		return &mcp.StreamableClientTransport{
			Endpoint:   t.Http.GetUrl(),
			HTTPClient: &http.Client{Transport: &withHeaders{headers: t.Http.GetHeaders(), base: http.DefaultTransport}},
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
	return &mcp.CommandTransport{Command: cmd, TerminateDuration: terminateAfter}, cmd, nil
}

// withHeaders adds the configured headers to every request the SDK makes:
// they are the bridge's own upstream credentials, never a driver's. The
// SDK's own headers (session id, protocol version) are never replaced.
type withHeaders struct {
	headers map[string]string
	base    http.RoundTripper
}

func (w *withHeaders) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(w.headers) == 0 {
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
