package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/gateway/mcpserve"
	"github.com/switchboard-run/switchboard/tests/internal/procs"
)

const rugpullPkg = procs.Module + "tests/gateway/testdata/rugpull"

// untilTools lists cs's tools until ok holds of them, waking on each
// notifications/tools/list_changed; it fails the test after 15 s.
func untilTools(t *testing.T, cs *mcp.ClientSession, changed <-chan struct{}, what string, ok func(map[string]*mcp.Tool) bool) map[string]*mcp.Tool {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]*mcp.Tool{}
		for _, tool := range res.Tools {
			byName[tool.Name] = tool
		}
		if ok(byName) {
			return byName
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("tools/list never showed %s: %v", what, slices.Sorted(func(yield func(string) bool) {
				for n := range byName {
					if !yield(n) {
						return
					}
				}
			}))
		}
	}
}

// restPins reads workspace ws's changed pins over REST as an admin.
func (s *suite) restPins(t *testing.T, ws string) []map[string]any {
	t.Helper()
	rep := do(t, s.Client, http.MethodGet, s.URL+"/v1/workspaces/"+ws+"/pins", as("ops", identity.Admin), nil)
	if rep.Status != http.StatusOK {
		t.Fatalf("GET pins: HTTP %d %s", rep.Status, rep.Body)
	}
	var res struct {
		Pins []map[string]any `json:"pins"`
	}
	if err := json.Unmarshal(rep.Body, &res); err != nil {
		t.Fatal(err)
	}
	return res.Pins
}

// A mounted MCP server that rewrites a tool's description after it was
// pinned (the rug pull): under the default policy, hold, the tool leaves
// tools/list of a live session, a call is refused naming what changed on
// every front, and an admin's approval over REST brings it back; under
// warn it stays, flagged.
func TestAMountedServersChangedToolIsHeldUntilApproved(t *testing.T) {
	t.Parallel()
	s := newSuite(t, options{})
	st, err := s.bridge.Mount(opsCtx, &bridgev1.MountRequest{Client: "rp", Config: &bridgev1.ServerConfig{
		Transport: &bridgev1.ServerConfig_Stdio{Stdio: &bridgev1.StdioTransport{Command: testkit.Build(t, rugpullPkg)}}}})
	if err != nil || st.GetServer().GetState() != bridgev1.State_STATE_RUNNING {
		t.Fatalf("Mount(rp) = %v, %v", st, err)
	}
	s.join(t, "default", "rp")
	changed := make(chan struct{}, 64)
	var notified atomic.Int64
	cs := s.connect(t, "/mcp", as("alice", identity.Driver), &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { notified.Add(1); changed <- struct{}{} }})
	untilTools(t, cs, changed, "rp_read_file", func(m map[string]*mcp.Tool) bool { return m["rp_read_file"] != nil })

	call := func(name string) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res
	}
	before := notified.Load()
	call("rp_pull")
	untilTools(t, cs, changed, "rp_read_file held", func(m map[string]*mcp.Tool) bool { return m["rp_read_file"] == nil && m["rp_pull"] != nil })
	testkit.Eventually(t, "notifications/tools/list_changed for the hold", 10*time.Second, func() bool { return notified.Load() > before })
	const sentence = `tool "rp_read_file" is held in workspace "default": its description changed since it was pinned`
	if res := call("rp_read_file"); !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, sentence) {
		t.Fatalf("a call of the held tool over MCP answered %+v", res.Content[0])
	}
	_, err = s.Mailbox.Invoke(testkit.As("alice", identity.Driver), &mailboxv1.InvokeRequest{Client: "rp", Tool: "read_file", Input: "{}"})
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), sentence) {
		t.Fatalf("a gRPC invoke of the held tool: %v", err)
	}
	if rep := s.postAs(t, "alice", "/v1/call", `{"client":"rp","tool":"read_file","input":"{}"}`); rep.Status != http.StatusConflict || !strings.Contains(string(rep.Body), "its description changed since it was pinned") {
		t.Fatalf("a REST call of the held tool: HTTP %d %s", rep.Status, rep.Body)
	}

	pins := s.restPins(t, "default")
	if len(pins) != 1 || pins[0]["state"] != "PIN_STATE_HELD" || !slices.Equal(toStrings(pins[0]["changed"]), []string{"description"}) {
		t.Fatalf("GET pins = %v", pins)
	}
	approve := `{"fingerprint":"` + pins[0]["advertised_fingerprint"].(string) + `"}`
	if rep := do(t, s.Client, http.MethodPost, s.URL+"/v1/workspaces/default/pins/rp_read_file:approve", as("alice", identity.Driver), []byte(approve)); rep.Status != http.StatusForbidden {
		t.Fatalf("a driver's approval: HTTP %d %s", rep.Status, rep.Body)
	}
	if rep := do(t, s.Client, http.MethodPost, s.URL+"/v1/workspaces/default/pins/rp_read_file:approve", as("ops", identity.Admin), []byte(approve)); rep.Status != http.StatusOK {
		t.Fatalf("approve: HTTP %d %s", rep.Status, rep.Body)
	}
	back := untilTools(t, cs, changed, "rp_read_file approved", func(m map[string]*mcp.Tool) bool { return m["rp_read_file"] != nil })
	if !strings.Contains(back["rp_read_file"].Description, "(1)") {
		t.Fatalf("the approved tool reads %q", back["rp_read_file"].Description)
	}
	if res := call("rp_read_file"); res.IsError {
		t.Fatalf("the approved tool answered %+v", res.Content[0])
	}

	// Warn: the next change stays listed, flagged.
	if rep := do(t, s.Client, http.MethodPut, s.URL+"/v1/workspaces/default/pin-policy", as("ops", identity.Admin), []byte(`{"policy":"PIN_POLICY_WARN"}`)); rep.Status != http.StatusOK {
		t.Fatalf("set policy: HTTP %d %s", rep.Status, rep.Body)
	}
	call("rp_pull")
	flagged := untilTools(t, cs, changed, "rp_read_file flagged", func(m map[string]*mcp.Tool) bool {
		return m["rp_read_file"] != nil && m["rp_read_file"].Meta[mcpserve.MetaChanged] != nil
	})
	if got := toStrings(flagged["rp_read_file"].Meta[mcpserve.MetaChanged]); !slices.Equal(got, []string{"description"}) || !strings.Contains(flagged["rp_read_file"].Description, "(2)") {
		t.Fatalf("under warn the tool reads %q, flagged %v", flagged["rp_read_file"].Description, got)
	}
	if res := call("rp_read_file"); res.IsError {
		t.Fatalf("under warn the changed tool answered %+v", res.Content[0])
	}

	// The trail holds the mount, the approval and the policy change.
	trail := registryv1.NewAuditServiceClient(s.Conn)
	want := map[string]string{"mount": "rp", "pin.approve": "rp_read_file", "pin.policy": "default"}
	testkit.Eventually(t, "the mount, the approval and the policy in the audit trail", 10*time.Second, func() bool {
		res, err := trail.ListAudit(opsCtx, &registryv1.ListAuditRequest{})
		found := 0
		for _, e := range res.GetEvents() {
			if want[e.GetAction()] == e.GetTarget() && e.GetActor() == "ops" {
				found++
			}
		}
		return err == nil && found == len(want)
	})
}

// An argv host that advertises a tool again with another input schema:
// the tool is held in the listing and on every call front.
func TestAHostsChangedSchemaIsHeld(t *testing.T) {
	t.Parallel()
	s := newSuite(t, options{})
	tool := &registryv1.Tool{Name: "rm", Description: "Removes a file.", InputSchema: `{"type":"object","properties":{"path":{"type":"string"}}}`}
	s.advertise(t, "box", tool)
	s.join(t, "default", "box")
	tool.InputSchema = `{"type":"object","properties":{"path":{"type":"string"},"recursive":{"type":"boolean","default":true}}}`
	s.advertise(t, "box", tool)

	rep := do(t, s.Client, http.MethodGet, s.URL+"/v1/workspaces/default/tools", as("alice", identity.Driver), nil)
	if rep.Status != http.StatusOK || strings.Contains(string(rep.Body), "box_rm") {
		t.Fatalf("the listing: HTTP %d %s", rep.Status, rep.Body)
	}
	// The sentence, as JSON quotes it.
	const sentence = `tool \"box_rm\" is held in workspace \"default\": its input_schema changed since it was pinned`
	// The listing reads the registry; the mailbox checks a call against
	// its own view of it, which hears the change a moment later.
	testkit.Await(t, "a REST invoke of the held tool refused", 10*time.Second, func() error {
		if rep := s.postAs(t, "alice", "/v1/invocations", `{"client":"box","tool":"rm","input":"{}"}`); rep.Status != http.StatusConflict || !strings.Contains(string(rep.Body), sentence) {
			return fmt.Errorf("HTTP %d %s", rep.Status, rep.Body)
		}
		return nil
	})
	if rep := s.postAs(t, "alice", "/v1/act", `{"op":"invoke","client":"box","tool":"rm","input":{}}`); !strings.Contains(string(rep.Body), `"ok":false`) || !strings.Contains(string(rep.Body), sentence) {
		t.Fatalf("an act invoke of the held tool: HTTP %d %s", rep.Status, rep.Body)
	}
	res, err := s.Registry.ListPins(opsCtx, &registryv1.ListPinsRequest{Workspace: "default"})
	if err != nil || len(res.Pins) != 1 {
		t.Fatalf("ListPins = %v, %v", res, err)
	}
	if _, err := s.Registry.RejectPin(opsCtx, &registryv1.RejectPinRequest{Workspace: "default", PresentedName: "box_rm", Fingerprint: res.Pins[0].AdvertisedFingerprint}); err != nil {
		t.Fatal(err)
	}
	testkit.Await(t, "a REST invoke of the rejected tool refused", 10*time.Second, func() error {
		if rep := s.postAs(t, "alice", "/v1/invocations", `{"client":"box","tool":"rm","input":"{}"}`); !strings.Contains(string(rep.Body), "an admin rejected that change") {
			return fmt.Errorf("HTTP %d %s", rep.Status, rep.Body)
		}
		return nil
	})
}

func toStrings(v any) []string {
	var out []string
	if list, ok := v.([]any); ok {
		for _, x := range list {
			s, _ := x.(string)
			out = append(out, s)
		}
	}
	return out
}
