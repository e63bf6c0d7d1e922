package gateway_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// echoHost is a tool host on the mailbox's Follow stream that completes
// every invocation of its one tool "echo" with its input, at once: the
// routing is all that is measured.
func (s *suite) echoHost(b *testing.B, client string) {
	b.Helper()
	s.advertise(b, client, &registryv1.Tool{Name: "echo", InputSchema: `{"type":"object"}`})
	f := s.follow(b, client)
	ctx, cancel := context.WithCancel(testkit.As(client, identity.Host))
	b.Cleanup(cancel)
	go func() {
		for {
			select {
			case inv := <-f.invocations:
				_, _ = s.Mailbox.Complete(ctx, &mailboxv1.CompleteRequest{Invocation: inv.GetInvocation(), Capture: capture.New(inv.GetInput(), "", 0)})
			case <-ctx.Done():
				return
			}
		}
	}()
	s.join(b, "default", client)
}

// BenchmarkToolsCall compares one tool call through the MCP endpoint (the
// Go SDK's client over Streamable HTTP, in each protocol era) with the same
// call made straight to the mailbox's Call over gRPC, against the same
// in-process suite and the same echo host.
// Run it without -race: go test -run '^$' -bench ToolsCall ./services/gateway/
func BenchmarkToolsCall(b *testing.B) {
	s := newSuite(b, options{laptop: true})
	s.echoHost(b, "echobox")

	b.Run("mailbox-call-grpc", func(b *testing.B) {
		for i := range b.N {
			input := fmt.Sprintf(`{"i":%d}`, i)
			ctx, cancel := context.WithTimeout(aliceCtx, 10*time.Second)
			res, err := s.Mailbox.Call(ctx, &mailboxv1.CallRequest{Client: "echobox", Tool: "echo", Input: input})
			cancel()
			if err != nil || res.GetCapture().GetStdout() != input {
				b.Fatalf("Call: %v, %v", res, err)
			}
		}
	})
	// What the MCP endpoint does per call, straight over gRPC: post, then
	// collect with a wait (so that a cancellation can name the handle).
	b.Run("mailbox-invoke-capture-grpc", func(b *testing.B) {
		for i := range b.N {
			input := fmt.Sprintf(`{"i":%d}`, i)
			inv, err := s.Mailbox.Invoke(aliceCtx, &mailboxv1.InvokeRequest{Client: "echobox", Tool: "echo", Input: input})
			if err != nil {
				b.Fatal(err)
			}
			res, err := s.Mailbox.Capture(aliceCtx, collectWaiting(inv.GetInvocation()))
			if err != nil || res.GetCapture().GetStdout() != input {
				b.Fatalf("Capture: %v, %v", res, err)
			}
		}
	})
	// A mounted MCP server's tool: its result travels as the server's own
	// (the capture's mcp_result), passed on as bytes on the fast path.
	s.mountConformance(b)
	for _, rev := range revisions {
		b.Run("mcp-http-mounted-"+rev, func(b *testing.B) {
			cs := s.connectAt(b, rev, "/mcp", as("alice", identity.Driver), nil)
			for range b.N {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "conf_test_simple_text", Arguments: map[string]any{}})
				if err != nil || res.IsError || len(texts(res)) != 1 {
					b.Fatalf("tools/call: %v, %v", res, err)
				}
			}
		})
	}
	for _, rev := range revisions {
		b.Run("mcp-http-"+rev, func(b *testing.B) {
			cs := s.connectAt(b, rev, "/mcp", as("alice", identity.Driver), nil)
			for i := range b.N {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echobox_echo", Arguments: map[string]any{"i": i}})
				if want := fmt.Sprintf(`{"i":%d}`, i); err != nil || res.IsError || texts(res)[0] != want {
					b.Fatalf("tools/call: %v, %v", res, err)
				}
			}
		})
	}
}
