package faults

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/tests/internal/procs"
)

// A mounted MCP server's tool runs as a task; the embedded suite is killed
// mid-run and started again, and its bridge calls the server again: the
// task's result says it may have run twice, as its first text block and in
// _meta, and keeps the server's own blocks (an image) after it.
func TestAMountedServersCallRunTwiceAcrossAKillSaysSo(t *testing.T) {
	t.Parallel()
	d := procs.StartDev(t)
	dir := t.TempDir()
	t.Cleanup(func() { _ = os.WriteFile(filepath.Join(dir, "go"), nil, 0o600) })
	ops := testkit.As("ops", identity.Admin)
	cfg := &bridgev1.ServerConfig{Transport: &bridgev1.ServerConfig_Stdio{Stdio: &bridgev1.StdioTransport{
		Command: testkit.Build(t, procs.Module+"tests/faults/testdata/slowmcp"), Args: []string{dir}}}}
	if _, err := d.Bridge.Mount(ops, &bridgev1.MountRequest{Client: "slowmcp", Config: cfg}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Reg.RegisterClient(ops, &registryv1.RegisterClientRequest{Workspace: "default", Client: "slowmcp"}); err != nil {
		t.Fatal(err)
	}
	procs.WaitPresent(t, d.Reg, "slowmcp", true, procs.StartTimeout)
	client := &taskClient{url: "http://" + d.HTTPAddr + "/mcp", dev: d}
	task := client.start(t, "slowmcp_slow")
	runs := func() int {
		b, _ := os.ReadFile(filepath.Join(dir, "runs"))
		return strings.Count(string(b), "run")
	}
	testkit.Eventually(t, "the server to run the tool", 30*time.Second, func() bool { return runs() == 1 })

	d.Proc.Kill()
	d.Start()
	testkit.Eventually(t, "the restarted suite's bridge to call the server again", 60*time.Second, func() bool { return runs() == 2 })
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	done := client.await(t, task, "completed", func(tr taskReply) bool { return tr.Status != "working" && tr.Status != "" })
	var res mcp.CallToolResult
	if done.Status != "completed" || json.Unmarshal(done.Result, &res) != nil {
		t.Fatalf("the task = %+v (result %s)", done, done.Result)
	}
	const want = `this invocation was handed to "slowmcp" 2 times; each hand-off may have run it`
	first, _ := res.Content[0].(*mcp.TextContent)
	meta, _ := res.Meta["run.switchboard/warning"].(string)
	if first == nil || !strings.HasPrefix(first.Text, want) || !strings.HasPrefix(meta, want) {
		t.Fatalf("the result does not warn of two runs, first and in _meta: %s", done.Result)
	}
	if len(res.Content) != 3 || res.Content[1].(*mcp.TextContent).Text != "done" {
		t.Fatalf("the server's own blocks did not follow the warning: %s", done.Result)
	}
	if img, ok := res.Content[2].(*mcp.ImageContent); !ok || string(img.Data) != "\x89PNG\r\n\x1a\n" {
		t.Fatalf("the server's image did not arrive: %s", done.Result)
	}
}
