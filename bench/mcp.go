package main

import (
	"context"
	"fmt"
	"os/exec"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
)

// mcpCall measures a trivial tool call (test_simple_text) on the Go SDK's
// conformance server over stdio, made directly with the SDK and made
// through the suite (mailbox Call → the bridge → the same server): through
// the embedded suite `make run` starts (mcp_ratio), and through the split
// deployment, one process per service (mcp_ratio_split), where each hop
// also wakes another process.
func mcpCall(ctx context.Context, r *report, embedded, split *suite, server string) error {
	client := mcp.NewClient(&mcp.Implementation{Name: "switchboard-bench", Version: "1"}, nil)
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(server)}, nil)
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", server, err)
	}
	defer session.Close()
	direct, err := sample(ctx, r.warm, r.samples, func(ctx context.Context) error {
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "test_simple_text", Arguments: map[string]any{}})
		if err == nil && res.IsError {
			err = fmt.Errorf("test_simple_text answered isError")
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("direct SDK call: %w", err)
	}
	r.latency("mcp_direct", direct)
	through, err := throughSuite(ctx, r, embedded, server)
	if err != nil {
		return fmt.Errorf("call through the embedded suite: %w", err)
	}
	r.latency("mcp_through_suite", through)
	r.ratio("mcp_ratio", through.p50(), direct.p50(), 3, true)
	r.check("mcp_through_suite_p50_ms", float64(through.p50())/float64(time.Millisecond), 1, true)
	throughSplit, err := throughSuite(ctx, r, split, server)
	if err != nil {
		return fmt.Errorf("call through the split deployment: %w", err)
	}
	r.latency("mcp_through_split", throughSplit)
	r.plain("mcp_ratio_split", float64(throughSplit.p50())/float64(direct.p50()))
	return nil
}

// throughSuite mounts server on s's bridge and samples the call through it.
func throughSuite(ctx context.Context, r *report, s *suite, server string) (*latency, error) {
	op, err := mountConformance(ctx, s, server)
	if err != nil {
		return nil, err
	}
	return sample(ctx, r.warm, r.samples, op)
}

// mountConformance mounts server on s's bridge as "conformance" and returns
// one call of its test_simple_text through the mailbox, as a driver.
func mountConformance(ctx context.Context, s *suite, server string) (func(context.Context) error, error) {
	octx := identity.As(ctx, identity.Identity{Name: "bench-admin", Grade: identity.Admin})
	_, err := s.br.Mount(octx, &bridgev1.MountRequest{Client: "conformance", Config: &bridgev1.ServerConfig{
		Transport: &bridgev1.ServerConfig_Stdio{Stdio: &bridgev1.StdioTransport{Command: server}}}})
	if err != nil {
		return nil, fmt.Errorf("mounting %s: %w", server, err)
	}
	return func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(identity.As(ctx, driver), 10*time.Second)
		defer cancel()
		res, err := s.mb.Call(ctx, &mailboxv1.CallRequest{Client: "conformance", Tool: "test_simple_text", Input: `{}`})
		if err == nil && res.GetCapture().GetExitCode() != 0 {
			err = fmt.Errorf("capture %v", res.GetCapture())
		}
		return err
	}, nil
}
