package gateway_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// A real MCP client lists and calls, through the gateway's /mcp: a tool
// served by a real tool host (MCP in → mailbox → host → argv), and a tool of
// a real MCP server mounted on the bridge (MCP in → mailbox → bridge → MCP
// out).
func TestAnMCPClientListsAndCallsTheWorkspacesTools(t *testing.T) {
	t.Parallel()
	forEachRevision(t, listAndCall)
}

func listAndCall(t *testing.T, rev string) {
	s := newSuite(t, options{laptop: true})
	s.mountConformance(t)
	cs := s.connectAt(t, rev, "/mcp", as("alice", identity.Driver), nil)

	listed := map[string]*mcp.Tool{}
	var order []string
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		listed[tool.Name] = tool
		order = append(order, tool.Name)
	}
	want, err := s.Registry.ListTools(aliceCtx, &registryv1.ListToolsRequest{Workspace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	var wantOrder []string
	for _, p := range want.GetTools() {
		wantOrder = append(wantOrder, p.GetPresentedName())
	}
	if !slices.Equal(order, wantOrder) {
		t.Fatalf("tools/list = %v\nthe registry lists %v", order, wantOrder)
	}
	cat := listed["laptop_cat"]
	if cat == nil || cat.Description != "Prints its input." || cat.Meta[`run.switchboard/client`] != "laptop" {
		t.Fatalf("laptop_cat = %+v", cat)
	}
	if schema, _ := json.Marshal(cat.InputSchema); string(schema) != `{"properties":{"text":{"type":"string"}},"type":"object"}` {
		t.Errorf("laptop_cat's input schema = %s", schema)
	}
	if schema, _ := json.Marshal(listed["laptop_fail"].InputSchema); string(schema) != `{"type":"object"}` {
		t.Errorf("laptop_fail's {} schema reached the client as %s", schema)
	}

	tests := []struct {
		name, tool string
		args       any
		isError    bool
		texts      []string
		structured string
	}{
		{"a host tool's stdout is the text", "laptop_cat", map[string]any{"text": "héllo"}, false, []string{`{"text":"héllo"}`}, ""},
		{"a host tool's failure names its exit code and keeps both streams", "laptop_fail", nil, true, []string{"exit code 3\nbad\n", "out\n"}, ""},
		{"a host tool with an output schema gets structured content", "laptop_stats", nil, false, []string{"{\"files\": 3}\n"}, `{"files":3}`},
		{"a bridged server's text comes back through the mailbox", "conf_test_simple_text", nil, false,
			[]string{"This is a simple text response for testing."}, ""},
		{"a bridged server's isError is its own error result", "conf_test_error_handling", nil, true,
			[]string{"this tool intentionally returns an error for testing"}, ""},
		{"a name nobody presents is an error result naming it", "laptop_nope", nil, true,
			[]string{`no tool is presented as "laptop_nope" in workspace "default" right now; list the workspace's tools (tools/list) for the names in force`}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tt.tool, Arguments: tt.args})
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError != tt.isError || !slices.Equal(texts(res), tt.texts) {
				t.Fatalf("%s: isError=%v %q\nwant isError=%v %q", tt.tool, res.IsError, texts(res), tt.isError, tt.texts)
			}
			if got, _ := json.Marshal(res.StructuredContent); tt.structured != "" && string(got) != tt.structured {
				t.Errorf("structuredContent = %s, want %s", got, tt.structured)
			}
		})
	}

	// The same workspace by its name; another workspace has other tools.
	named := s.connectAt(t, rev, "/mcp/default", as("alice", identity.Driver), nil)
	res, err := named.ListTools(context.Background(), nil)
	if err != nil || len(res.Tools) != len(order) {
		t.Fatalf("/mcp/default lists %d tools (%v), /mcp %d", len(res.Tools), err, len(order))
	}
	empty := s.connectAt(t, rev, "/mcp/nobody-made-this", as("alice", identity.Driver), nil)
	if res, err := empty.ListTools(context.Background(), nil); err != nil || len(res.Tools) != 0 {
		t.Fatalf("a workspace without members lists %v, %v", res, err)
	}
}

// list_changed reaches a connected client when a host advertises a new set,
// and when a member leaves the workspace; changes outside the workspace
// reach nobody.
func TestListChangedReachesAConnectedClientWhenAHostAdvertisesANewSet(t *testing.T) {
	t.Parallel()
	forEachRevision(t, listChanged)
}

func listChanged(t *testing.T, rev string) {
	s := newSuite(t, options{laptop: true})
	advertise := func(client string, names ...string) {
		t.Helper()
		var tools []*registryv1.Tool
		for _, n := range names {
			tools = append(tools, &registryv1.Tool{Name: n, Description: n, InputSchema: `{"type":"object"}`})
		}
		if _, err := s.Registry.Advertise(testkit.As(client, identity.Host), &registryv1.AdvertiseRequest{Tools: tools}); err != nil {
			t.Fatal(err)
		}
	}
	advertise("box", "a")
	s.join(t, "team", "box")
	s.join(t, "team", "laptop")

	changed := make(chan struct{}, 16)
	cs := s.connectAt(t, rev, "/mcp/team", as("alice", identity.Driver), &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }})
	names := func() []string {
		t.Helper()
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tool := range res.Tools {
			out = append(out, tool.Name)
		}
		return out
	}
	if got := names(); !slices.Equal(got, []string{"box_a", "laptop_cat", "laptop_fail", "laptop_stats"}) {
		t.Fatalf("before: %v", got)
	}

	start := time.Now()
	advertise("box", "a", "b")
	testkit.Receive(t, changed, 10*time.Second, "notifications/tools/list_changed after a new advertisement")
	t.Logf("list_changed arrived %v after the advertisement", time.Since(start))
	if got := names(); !slices.Equal(got, []string{"box_a", "box_b", "laptop_cat", "laptop_fail", "laptop_stats"}) {
		t.Fatalf("after the new set: %v", got)
	}

	if _, err := s.Registry.UnregisterClient(opsCtx, &registryv1.UnregisterClientRequest{Workspace: "team", Client: "box"}); err != nil {
		t.Fatal(err)
	}
	testkit.Receive(t, changed, 10*time.Second, "notifications/tools/list_changed after the member left")
	if got := names(); !slices.Equal(got, []string{"laptop_cat", "laptop_fail", "laptop_stats"}) {
		t.Fatalf("after box left: %v", got)
	}

	// A client of another workspace (dev mode puts it in default) changes
	// nothing here.
	advertise("outsider", "x")
	select {
	case <-changed:
		t.Fatal("a change outside the workspace was notified")
	case <-time.After(300 * time.Millisecond):
	}
}

// A call that outlives the client's timeout is answered before it, with the
// invocation's handle; the capture can be collected later by the caller.
func TestACallThatOutlivesTheClientsTimeoutAnswersWithItsHandle(t *testing.T) {
	t.Parallel()
	forEachRevision(t, outlive)
}

func outlive(t *testing.T, rev string) {
	s := newSuite(t, options{laptop: true})
	slow := s.waiter(t, "slowbox")
	cs := s.connectAt(t, rev, "/mcp", as("alice", identity.Driver), nil)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slowbox_wait", Arguments: map[string]any{},
		Meta: mcp.Meta{"run.switchboard/timeout": "1s"}})
	took := time.Since(start)
	if err != nil {
		t.Fatalf("the call ended with %v after %v", err, took)
	}
	inv := testkit.Receive(t, slow.invocations, 10*time.Second, "the host to be handed the invocation")
	want := `tool "slowbox_wait" is still running as invocation ` + inv.GetInvocation() + ` after 1s; collect its capture later with: switchboard capture ` +
		inv.GetInvocation() + ` --wait 60s`
	if !res.IsError || !slices.Equal(texts(res), []string{want}) {
		t.Fatalf("result = isError %v %q\nwant %q", res.IsError, texts(res), want)
	}
	// When it came is logged, not asserted: on a busy machine the answer
	// made just before the timeout may arrive after it.
	t.Logf("answered with the handle after %v (timeout 1s)", took)

	// The handle is alice's: she collects the capture once the host answers.
	if _, err := s.Mailbox.Complete(testkit.As("slowbox", identity.Host), answer(inv.GetInvocation(), "late\n")); err != nil {
		t.Fatal(err)
	}
	got, err := s.Mailbox.Capture(aliceCtx, collectWaiting(inv.GetInvocation()))
	if err != nil || got.GetCapture().GetStdout() != "late\n" {
		t.Fatalf("alice's collection = %v, %v", got, err)
	}
}

// The MCP client cancelling a running call cancels its invocation: the host
// hears it on its follow stream.
func TestCancellingACallCancelsItsInvocation(t *testing.T) {
	t.Parallel()
	forEachRevision(t, cancelCall)
}

func cancelCall(t *testing.T, rev string) {
	s := newSuite(t, options{laptop: true})
	slow := s.waiter(t, "slowbox")
	cs := s.connectAt(t, rev, "/mcp", as("alice", identity.Driver), nil)

	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slowbox_wait", Arguments: map[string]any{}})
		ended <- err
	}()
	inv := testkit.Receive(t, slow.invocations, 10*time.Second, "the host to be handed the invocation")
	cancel()
	if err := testkit.Receive(t, ended, 5*time.Second, "the client's call to end"); err == nil {
		t.Fatal("a cancelled call returned a result")
	}
	if got := testkit.Receive(t, slow.cancelled, 10*time.Second, "the cancellation on the follow stream"); got != inv.GetInvocation() {
		t.Fatalf("the host was told %s was cancelled, but it runs %s", got, inv.GetInvocation())
	}
	// Cancel answered it, and the endpoint's Call took the answer: nothing
	// is left to collect. (Asked by Status, which reads without taking, so
	// the test never takes the answer from the Call it races.)
	testkit.Eventually(t, "the cancelled invocation to be gone", 10*time.Second, func() bool {
		_, err := s.Mailbox.Status(aliceCtx, &mailboxv1.StatusRequest{Invocation: inv.GetInvocation()})
		return err != nil && strings.Contains(err.Error(), "is in flight")
	})
	if _, err := s.Mailbox.Capture(aliceCtx, collectWaiting(inv.GetInvocation())); err == nil || !strings.Contains(err.Error(), "is in flight") {
		t.Fatalf("collecting a cancelled invocation: %v", err)
	}
	// The session survives a cancelled call.
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "laptop_cat", Arguments: map[string]any{"n": 1}})
	if err != nil || res.IsError || !slices.Equal(texts(res), []string{`{"n":1}`}) {
		t.Fatalf("the next call: %v, %v", res, err)
	}
}

// A host identity has no business on a driver's endpoint.
func TestTheMCPEndpointIsForDriversAndAdmins(t *testing.T) {
	t.Parallel()
	s := newSuite(t, options{laptop: true})
	_, err := s.openSession("", "/mcp", as("laptop", identity.Host), nil)
	if err == nil || !strings.Contains(err.Error(), "Forbidden") {
		t.Fatalf("a host connecting: %v", err)
	}
}
