package faults

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/tests/internal/procs"
)

// slowTool is the "worker" host's one tool: it counts its runs in
// DIR/runs, says it started (DIR/started), and finishes once DIR/go exists.
const slowTool = `[{"name": "slow", "description": "Runs until told to finish.", "input_schema": {"type": "object"},
  "command": ["sh", "-c", "echo run >> DIR/runs; touch DIR/started; while [ ! -f DIR/go ]; do sleep 0.05; done; echo done"]}]`

// An MCP tools/call whose mailbox replica is killed (-9) while the tool
// runs is answered with the tool's output, not with the broken
// connection: the invocation is in NATS, the host goes on with it and
// completes it through the other replica, and the gateway collects the
// capture by the handle its Call named. The tool runs once.
func TestAnMCPCallWhoseMailboxReplicaDiesIsAnsweredThroughTheOther(t *testing.T) {
	t.Parallel()
	s := procs.NewSplit(t, procs.Options{Replicas: 2})
	a, b := s.Mailboxes[0], s.Mailboxes[1]
	// The host and the gateway first find replica A alone, so the call
	// and the host's read are both on A, the replica killed.
	b.Proc.Kill()
	dir := t.TempDir()
	procs.Host(t, "worker", strings.ReplaceAll(slowTool, "DIR", dir), s.RegAddr, s.MailboxAddrs())
	s.WaitPresent("worker", true, procs.StartTimeout)
	if _, err := s.Reg.RegisterClient(testkit.As("ops", identity.Admin),
		&registryv1.RegisterClientRequest{Workspace: "default", Client: "worker"}); err != nil {
		t.Fatal(err)
	}
	gwAddr := testkit.FreeAddr(t)
	s.Gateway(gwAddr, s.RegAddr)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "switchboard-faults", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: "http://" + gwAddr + "/mcp",
			HTTPClient: testkit.HeaderClient(http.Header{"Switchboard-Identity": {"driver"}, "Switchboard-Grade": {string(identity.Driver)}})},
		&mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	testkit.Eventually(t, "worker_slow in the workspace's tools", procs.StartTimeout, func() bool {
		res, err := cs.ListTools(ctx, nil)
		return err == nil && slices.ContainsFunc(res.Tools, func(tl *mcp.Tool) bool { return tl.Name == "worker_slow" })
	})

	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	called := make(chan outcome, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "worker_slow", Arguments: map[string]any{}})
		called <- outcome{res, err}
	}()
	testkit.Eventually(t, "the tool to start", procs.StartTimeout, func() bool {
		_, err := os.Stat(filepath.Join(dir, "started"))
		return err == nil
	})
	a.Proc.Kill()
	t.Logf("mailbox replica A (%s) killed while the tool ran", a.Addr)
	s.StartMailbox(1)
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	select {
	case o := <-called:
		if o.err != nil {
			t.Fatalf("tools/call: %v", o.err)
		}
		text := texts(o.res)
		if o.res.IsError || text != "done\n" {
			t.Fatalf("tools/call answered isError=%v %q; want the tool's output \"done\\n\"", o.res.IsError, text)
		}
	case <-ctx.Done():
		t.Fatal("tools/call was not answered within 2 minutes")
	}
	runs, err := os.ReadFile(filepath.Join(dir, "runs"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(runs), "run"); n != 1 {
		t.Errorf("the tool ran %d times; want once", n)
	}
}

// texts joins the text contents of a tool result.
func texts(res *mcp.CallToolResult) string {
	var out []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			out = append(out, tc.Text)
		}
	}
	return strings.Join(out, "")
}
