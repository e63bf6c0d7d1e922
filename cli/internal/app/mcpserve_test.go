package app_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-run/switchboard/cli/dev"
	"github.com/switchboard-run/switchboard/cli/internal/app"
	"github.com/switchboard-run/switchboard/kit/lib/logging"
	"github.com/switchboard-run/switchboard/kit/suite/process"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/mailbox"
)

// startEmbedded runs the whole suite in this process, as `switchboard dev`
// does: a tool host serving a tools file as "laptop" and the Go SDK's
// conformance server mounted on the bridge as "conf", both joining the
// default workspace. It returns the gRPC address and the flag naming the
// run's secret.
func startEmbedded(t *testing.T) (string, string) {
	t.Helper()
	dir := t.TempDir()
	toolsFile := filepath.Join(dir, "tools.json")
	mcpConfig := filepath.Join(dir, "mcp.json")
	write := func(path, content string) {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(toolsFile, `[{"name": "cat", "description": "Prints its input.", "input_schema": {"type": "object"}, "command": ["cat"]}]`)
	write(mcpConfig, `{"mcpServers": {"conf": {"command": "`+testkit.Tool(t, "everything-server")+`"}}}`)
	ready := make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- dev.Run(ctx, dev.Options{GRPC: "127.0.0.1:0", HTTP: "127.0.0.1:0", DataDir: filepath.Join(dir, "data"),
			MCPConfig: mcpConfig, ToolsFile: toolsFile, ToolsClient: "laptop", Log: logging.Discard(),
			Mailbox: mailbox.Bounds{TTL: time.Hour, MaxQueued: 1000, MaxSlots: 10_000, MaxCaptureBytes: 1 << 20},
			Ready:   func(grpcAddr, _ string) { ready <- grpcAddr }})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("dev.Run: %v", err)
		}
	})
	select {
	case addr := <-ready:
		return addr, "--dev-secret-file=" + filepath.Join(dir, "data", process.DevSecretFile)
	case err := <-done:
		t.Fatalf("dev.Run ended before it was ready: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the dev suite did not start within 30s")
	}
	return "", ""
}

// A desktop agent launches `switchboard mcp serve` and speaks MCP on its
// stdin/stdout: the real binary, driven by the Go SDK's client, lists and
// calls a host's tool and a bridged server's tool, and hears list_changed
// when the bridged server changes its tools.
func TestTheStdioFormServesTheWorkspaceToALaunchingAgent(t *testing.T) {
	t.Parallel()
	addr, secret := startEmbedded(t)
	bin := testkit.Build(t, "github.com/switchboard-run/switchboard/cli/cmd/switchboard")

	var stderr bytes.Buffer
	cmd := exec.Command(bin, "mcp", "serve", "--addr", addr, secret, "--as", "alice", "--log-level", "info")
	cmd.Stderr = &stderr
	changed := make(chan struct{}, 8)
	client := mcp.NewClient(&mcp.Implementation{Name: "desktop-agent", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting to switchboard mcp serve: %v\nstderr: %s", err, stderr.String())
	}
	names := func() []string {
		t.Helper()
		var out []string
		for tool, err := range cs.Tools(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, tool.Name)
		}
		return out
	}
	listed := names()
	if !slices.Contains(listed, "laptop_cat") || !slices.Contains(listed, "conf_test_simple_text") || !slices.IsSorted(listed) {
		t.Fatalf("tools/list over stdio = %v", listed)
	}
	call := func(name string, args any) string {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError || len(res.Content) != 1 {
			t.Fatalf("%s: %v, %v", name, res, err)
		}
		return res.Content[0].(*mcp.TextContent).Text
	}
	if got := call("laptop_cat", map[string]any{"over": "stdio"}); got != `{"over":"stdio"}` {
		t.Errorf("laptop_cat = %q", got)
	}
	if got := call("conf_test_simple_text", nil); got != "This is a simple text response for testing." {
		t.Errorf("conf_test_simple_text = %q", got)
	}

	// MCP in → mailbox → bridge → MCP out, and the change comes back.
	call("conf_test_trigger_tool_change", nil)
	select {
	case <-changed:
	case <-time.After(20 * time.Second):
		t.Fatalf("no list_changed after the bridged server changed its tools\nstderr: %s", stderr.String())
	}
	var transient string
	for _, n := range names() {
		if strings.Contains(n, "transient_tool_for_list_changed") {
			transient = n
		}
	}
	if transient == "" {
		t.Fatalf("the bridged server's new tool is not listed: %v", names())
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: transient}); err != nil || res.IsError {
		t.Fatalf("%s: %v, %v", transient, res, err)
	}

	// The bridged server's prompts and resources, read through the bridge
	// as the command's identity; they arrive with the bridge's catalog watch.
	testkit.Eventually(t, "conf's prompt served over stdio", 20*time.Second, func() bool {
		got, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "conf_test_prompt_with_arguments", Arguments: map[string]string{"arg1": "a", "arg2": "b"}})
		return err == nil && got.Messages[0].Content.(*mcp.TextContent).Text == "Prompt with arguments: arg1='a', arg2='b'"
	})
	if read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://static-text"}); err != nil || read.Contents[0].Text != "This is the content of the static text resource." {
		t.Fatalf("resources/read over stdio = %v, %v", read, err)
	}

	// The agent closes stdin: the command ends cleanly, at once.
	if err := cs.Close(); err != nil {
		t.Fatalf("closing the session: %v\nstderr: %s", err, stderr.String())
	}
	if st := cmd.ProcessState; st == nil || st.ExitCode() != 0 {
		t.Fatalf("switchboard mcp serve ended with %v\nstderr: %s", st, stderr.String())
	}
}

func TestTheStdioFormFailsWithASentenceWhenTheSuiteIsAway(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	code := app.Main(context.Background(), []string{"mcp", "serve", "--addr", testkit.FreeAddr(t), "--as", "alice", "--ready-wait", "500ms"},
		app.IO{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr})
	if code != 1 || stdout.Len() != 0 ||
		!strings.Contains(stderr.String(), `switchboard mcp serve: the registry has not listed the tools of workspace "default" within 500ms:`) {
		t.Fatalf("exit %d\nstdout %q\nstderr %q", code, stdout.String(), stderr.String())
	}
}

// `switchboard mcp serve --group G` serves that group alone; an unknown
// group ends it with the sentence naming the group.
func TestTheStdioFormServesAGroup(t *testing.T) {
	t.Parallel()
	addr, secret := startEmbedded(t)
	bin := testkit.Build(t, "github.com/switchboard-run/switchboard/cli/cmd/switchboard")
	if out, stderr, code := run(t, bin, "groups", "set", "--addr="+addr, secret, "default/text", "--pattern", "conf_test_simple_*",
		"--alias", "conf_test_simple_text=say"); code != 0 {
		t.Fatalf("groups set: exit %d, %q, %q", code, out, stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "mcp", "serve", "--addr", addr, secret, "--as", "alice", "--group", "text")
	cmd.Stderr = &stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting: %v\nstderr: %s", err, stderr.String())
	}
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, tool := range res.Tools {
		listed = append(listed, tool.Name)
	}
	if !slices.Contains(listed, "say") || slices.Contains(listed, "conf_test_simple_text") || slices.Contains(listed, "laptop_cat") {
		t.Fatalf("the group over stdio lists %v", listed)
	}
	got, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "say"})
	if err != nil || got.IsError || got.Content[0].(*mcp.TextContent).Text != "This is a simple text response for testing." {
		t.Fatalf("calling say = %v, %v", got, err)
	}

	_, errOut, code := run(t, bin, "mcp", "serve", "--addr", addr, secret, "--as", "alice", "--group", "nope")
	if code != 1 || !strings.Contains(errOut, `unknown group "nope" in workspace "default"`) {
		t.Fatalf("an unknown group: exit %d, %q", code, errOut)
	}
}
