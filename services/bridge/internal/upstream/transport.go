package upstream

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-run/switchboard/services/bridge/internal/child"
	"github.com/switchboard-run/switchboard/services/bridge/internal/pinned"
	mcpstdio "github.com/switchboard-run/switchboard/services/bridge/internal/stdio"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
)

// terminateAfter is how long closing a stdio server waits for it to exit on
// its own (after its stdin closes) before SIGTERM, and again before SIGKILL.
const terminateAfter = 2 * time.Second

// transport builds the SDK transport for cfg. For stdio it also returns the
// command, whose process is the server. onLog hears the server's log
// messages in order with its replies (logs.go).
func transport(cfg *bridgev1.ServerConfig, stderr io.Writer, onLog func(json.RawMessage)) (mcp.Transport, *exec.Cmd, error) {
	switch t := cfg.GetTransport().(type) {
	case *bridgev1.ServerConfig_Stdio:
		return stdioTransport(t.Stdio, stderr, onLog)
	case *bridgev1.ServerConfig_Http:
		endpoint, err := url.Parse(t.Http.GetUrl())
		if err != nil {
			return nil, nil, fmt.Errorf("url %q: %w", t.Http.GetUrl(), err)
		}
		// The SDK's own headers (session id, protocol version) are never
		// replaced by the configured ones.
		client := pinned.Client(endpoint, pinned.Credentials{Headers: t.Http.GetHeaders()}, "this server")
		client.Transport = logTapping{base: cmp.Or[http.RoundTripper](client.Transport, http.DefaultTransport), hear: onLog}
		return &mcp.StreamableClientTransport{Endpoint: t.Http.GetUrl(), HTTPClient: client}, nil, nil
	}
	return nil, nil, errors.New("the config names no MCP transport (stdio or http)")
}

func stdioTransport(s *bridgev1.StdioTransport, stderr io.Writer, onLog func(json.RawMessage)) (mcp.Transport, *exec.Cmd, error) {
	if s.GetCommand() == "" {
		return nil, nil, errors.New("the command is empty")
	}
	cmd := child.Command(append([]string{s.GetCommand()}, s.GetArgs()...), s.GetEnv(), s.GetCwd(), stderr, terminateAfter)
	if cmd.Err != nil {
		return nil, nil, fmt.Errorf("cannot run %q: %w", s.GetCommand(), cmd.Err)
	}
	// stderr is the server's log: kept as a tail, never read as an error.
	return &mcpstdio.Transport{Command: cmd, TerminateDuration: terminateAfter, DecodeToolResults: true, OnLog: onLog}, cmd, nil
}
