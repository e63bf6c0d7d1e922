package faults

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/tests/internal/procs"
)

// slowTool is the "worker" host's one tool: it counts its runs in
// DIR/runs and finishes once DIR/go exists.
const slowTool = `[{"name": "slow", "description": "Runs until told to finish.", "input_schema": {"type": "object"},
  "command": ["sh", "-c", "echo run >> DIR/runs; while [ ! -f DIR/go ]; do sleep 0.05; done; echo done"]}]`

// slowWorker starts the "worker" host of slowTool on s, in the default
// workspace, and a gateway; it returns the tool's folder and the gateway's
// address.
func slowWorker(t *testing.T, s *procs.Split) (dir, gwAddr string) {
	t.Helper()
	dir = t.TempDir()
	procs.Host(t, "worker", strings.ReplaceAll(slowTool, "DIR", dir), s.RegAddr, s.MailboxAddrs())
	s.WaitPresent("worker", true, procs.StartTimeout)
	if _, err := s.Reg.RegisterClient(testkit.As("ops", identity.Admin),
		&registryv1.RegisterClientRequest{Workspace: "default", Client: "worker"}); err != nil {
		t.Fatal(err)
	}
	gwAddr = testkit.FreeAddr(t)
	s.Gateway(gwAddr, s.RegAddr)
	return dir, gwAddr
}

// An MCP tools/call and a REST POST /v1/call held, with their host's
// read, by a mailbox replica that ends while the tool runs. Stopped as a
// rolling restart stops it (SIGTERM), the replica writes what it held to
// NATS; the host goes on through the other replica and the gateway
// collects each capture by the handle its Call named. Killed (-9), the
// calls lived only in its memory: each is answered with a sentence naming
// the handle and saying the tool may have run, never with "still
// running" or a hang. The tool runs once per call either way.
func TestCallsWhoseMailboxReplicaDiesAreAnsweredThroughTheOther(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name              string
		stop              func(t *testing.T, r *procs.Replica)
		wantMCP, wantREST string
	}{
		{"killed", func(_ *testing.T, r *procs.Replica) { r.Proc.Kill() }, "may have run it", "may have run it"},
		{"stopped with SIGTERM", func(t *testing.T, r *procs.Replica) {
			if err := r.Proc.Stop(procs.StartTimeout); err != nil {
				t.Errorf("the replica's exit on SIGTERM: %v", err)
			}
		}, "done\n", `"stdout":"done\n"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			callsThroughADyingReplica(t, c.stop, c.wantMCP, c.wantREST)
		})
	}
}

// callsThroughADyingReplica runs the test above with the replica ended by
// stop; the MCP and REST answers must contain wantMCP and wantREST.
func callsThroughADyingReplica(t *testing.T, stop func(*testing.T, *procs.Replica), wantMCP, wantREST string) {
	s := procs.NewSplit(t, procs.Options{Replicas: 2})
	a, b := s.Mailboxes[0], s.Mailboxes[1]
	// The host and the gateway first find replica A alone, so the call
	// and the host's read are both on A, the replica killed.
	b.Proc.Kill()
	dir, gwAddr := slowWorker(t, s)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := procs.MCPDriver(ctx, "http://"+gwAddr+"/mcp", "2026-07-28")
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	testkit.Eventually(t, "worker_slow in the workspace's tools", procs.StartTimeout, func() bool {
		res, err := cs.ListTools(ctx, nil)
		return err == nil && slices.ContainsFunc(res.Tools, func(tl *mcp.Tool) bool { return tl.Name == "worker_slow" })
	})

	mcpAnswer := make(chan string, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "worker_slow", Arguments: map[string]any{}})
		switch {
		case err != nil:
			mcpAnswer <- "error: " + err.Error()
		case res.IsError:
			mcpAnswer <- "isError: " + procs.Texts(res)
		default:
			mcpAnswer <- procs.Texts(res)
		}
	}()
	restAnswer := make(chan string, 1)
	go func() {
		restAnswer <- restCall(ctx, "http://"+gwAddr, `{"client":"worker","tool":"slow","input":"{}"}`)
	}()
	runs := filepath.Join(dir, "runs")
	testkit.Eventually(t, "both calls to run", procs.StartTimeout, func() bool {
		ran, _ := os.ReadFile(runs)
		return strings.Count(string(ran), "run") == 2
	})
	stop(t, a)
	t.Logf("mailbox replica A (%s) ended while the tool ran", a.Addr)
	s.StartMailbox(1)
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		name   string
		answer chan string
		want   string
	}{{"MCP tools/call", mcpAnswer, wantMCP}, {"POST /v1/call", restAnswer, wantREST}} {
		select {
		case got := <-c.answer:
			t.Logf("%s answered %s", c.name, got)
			if !strings.Contains(got, c.want) {
				t.Errorf("%s answered %s; want %q in it", c.name, got, c.want)
			}
		case <-ctx.Done():
			t.Fatalf("%s was not answered within 2 minutes", c.name)
		}
	}
	ran, err := os.ReadFile(runs)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(ran), "run"); n != 2 {
		t.Errorf("the tool ran %d times for two calls; want once each", n)
	}
}

// restCall posts body to the gateway's POST /v1/call as the driver and
// returns the status and the reply's body, or the error.
func restCall(ctx context.Context, base, body string) string {
	return restCallWith(ctx, base, nil, body)
}

// restCallWith is restCall with header's fields added to the request.
func restCallWith(ctx context.Context, base string, header http.Header, body string) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/call", strings.NewReader(body))
	if err != nil {
		return "error: " + err.Error()
	}
	req.Header = asDriver.Clone()
	for k, v := range header {
		req.Header[k] = v
	}
	res, err := testkit.HTTP.Do(req)
	if err != nil {
		return "error: " + err.Error()
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	if err != nil {
		return "error: " + err.Error()
	}
	return fmt.Sprintf("%d %s", res.StatusCode, out)
}
