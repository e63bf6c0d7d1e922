package upstream

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

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
	cmd := exec.Command(s.GetCommand(), s.GetArgs()...)
	if cmd.Err != nil {
		return nil, nil, fmt.Errorf("cannot run %q: %w", s.GetCommand(), cmd.Err)
	}
	cmd.Dir = s.GetCwd()
	cmd.Env = os.Environ()
	keys := make([]string, 0, len(s.GetEnv()))
	for k := range s.GetEnv() {
		keys = append(keys, k)
	}
	sort.Strings(keys) // a stable environment, so restarts are identical
	for _, k := range keys {
		cmd.Env = append(cmd.Env, k+"="+s.GetEnv()[k]) // later entries win in exec
	}
	if stderr == nil {
		stderr = io.Discard
	}
	// stderr is the server's log: kept as a tail, never read as an error.
	cmd.Stderr = stderr
	// Its own process group, so the servers that run through a launcher
	// (npx, uvx, sh -c) leave no grandchildren behind when stopped.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A grandchild holding stderr open must not keep Wait from returning.
	cmd.WaitDelay = terminateAfter
	return &mcp.CommandTransport{Command: cmd, TerminateDuration: terminateAfter}, cmd, nil
}

// killGroup ends whatever is left of a stdio server's process group.
func killGroup(cmd *exec.Cmd) {
	if cmd != nil && cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
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
