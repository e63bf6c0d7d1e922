package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-run/switchboard/kit/testkit"
)

// proxyRevision is the thin proxy's protocol revision: of the SDK's ways to
// serve Streamable HTTP, sessions answering in JSON cost the least
// (docs/bench.md, "The MCP endpoint's hot path").
const proxyRevision = "2025-11-25"

// serveProxy is the thin MCP proxy users pick instead of a suite, the
// endpoint step's reference: one process, Streamable HTTP in (the SDK's
// handler, sessions, JSON answers), the SDK's client on command's stdio
// out, each tool the server lists offered under its own name, forwarded.
func serveProxy(ctx context.Context, addr, command string) error {
	impl := &mcp.Implementation{Name: "thin-proxy", Version: "1"}
	up, err := mcp.NewClient(impl, nil).Connect(ctx, &mcp.CommandTransport{Command: exec.Command(command)}, nil)
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", command, err)
	}
	defer up.Close()
	srv := mcp.NewServer(impl, nil)
	forward := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return up.CallTool(ctx, &mcp.CallToolParams{Name: req.Params.Name, Arguments: req.Params.Arguments, Meta: req.Params.Meta})
	}
	for tool, err := range up.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("listing the tools of %s: %w", command, err)
		}
		srv.AddTool(tool, forward)
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{JSONResponse: true}), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = hs.Close()
	}()
	if err := hs.Serve(lis); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// thinProxy measures the thin proxy in front of server, a process of the
// bench's own (self): one session's p50, and calls/s and the proxy's CPU
// per call at endpointSessions sessions, as the endpoint is measured.
func thinProxy(ctx context.Context, r *report, t testkit.TB, self, server string) (*latency, load, error) {
	addr := testkit.FreeAddr(t)
	p := testkit.Start(t, self, "-serve-proxy", addr, "-proxy-server", server)
	defer p.Stop(10 * time.Second)
	pid := p.Cmd.Process.Pid
	sessions := make([]*mcp.ClientSession, endpointSessions)
	for i := range sessions {
		if err := eventually(ctx, func() (err error) {
			sessions[i], err = mcpSession(ctx, "http://"+addr, proxyRevision, &http.Transport{MaxIdleConnsPerHost: 4})
			return err
		}); err != nil {
			return nil, load{}, fmt.Errorf("connecting to the thin proxy: %w", err)
		}
		defer sessions[i].Close()
	}
	call := func(ctx context.Context, i int) error { return simpleText(ctx, sessions[i], "test_simple_text") }
	lat, err := sample(ctx, r.warm, r.samples, func(ctx context.Context) error { return call(ctx, 0) })
	if err != nil {
		return nil, load{}, fmt.Errorf("the thin proxy: %w", err)
	}
	tp, err := loadRun(ctx, &pid, endpointSessions, r.window, call)
	if err != nil {
		return nil, load{}, fmt.Errorf("the thin proxy at %d sessions: %w", endpointSessions, err)
	}
	return lat, tp, nil
}
