package app_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// headers is an http.RoundTripper that adds a dev-mode caller's headers.
type headers struct{ h http.Header }

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.h {
		r.Header[k] = v
	}
	return testkit.HTTP.Transport.RoundTrip(r)
}

// auditEvent is what the test reads of a JSON line of `switchboard audit
// --json`.
type auditEvent struct {
	Seq        string `json:"seq"`
	At         string `json:"at"`
	Actor      string `json:"actor"`
	Workspace  string `json:"workspace"`
	Action     string `json:"action"`
	Target     string `json:"target"`
	Detail     string `json:"detail"`
	Service    string `json:"service"`
	Invocation *struct {
		ID            string `json:"id"`
		Client        string `json:"client"`
		Tool          string `json:"tool"`
		PresentedName string `json:"presented_name"`
		Front         string `json:"front"`
		Posted        string `json:"posted"`
		Outcome       string `json:"outcome"`
		ExitCode      *int   `json:"exit_code"`
		BytesIn       string `json:"bytes_in"`
		BytesOut      string `json:"bytes_out"`
		Deliveries    int    `json:"deliveries"`
		Content       *struct {
			Input  string `json:"input"`
			Stdout string `json:"stdout"`
			Stderr string `json:"stderr"`
		} `json:"content"`
	} `json:"invocation"`
}

// TestAuditRecordsAScriptedSession runs `switchboard dev` and a tool host,
// makes a call on each front (act, REST, MCP, gRPC), a failing one, a
// cancelled one, a grant and a token, and reads `switchboard audit`: every
// event with its fields, and nothing else; a driver sees its own calls, and
// a token of another workspace nothing.
func TestAuditRecordsAScriptedSession(t *testing.T) {
	t.Parallel()
	bin := testkit.Build(t, module+"cli/cmd/switchboard")
	dir := t.TempDir()
	toolsFile := filepath.Join(dir, "tools.json")
	if err := os.WriteFile(toolsFile, []byte(tools), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDev(t, bin)
	addr := "--addr=" + d.grpcAddr
	testkit.Start(t, bin, "host", "--dev", "--dev-secret-file", d.secretFile, "--client", "box", "--tools", toolsFile, "--deadline", "20s", "--registry", d.grpcAddr, "--mailbox", d.grpcAddr)
	testkit.Eventually(t, "box to be present", 20*time.Second, func() bool {
		out, _, _ := d.run("clients", addr)
		return strings.Contains(out, "box") && strings.Contains(out, "true")
	})
	secret := testkit.DevSecret(t, d.data)
	alice := http.Header{"Switchboard-Identity": {"alice"}, "Switchboard-Grade": {"driver"}, "Switchboard-Dev-Secret": {secret}}
	web := &http.Client{Transport: headers{alice}, Timeout: 30 * time.Second}
	post := func(path, body string) string {
		t.Helper()
		res, err := web.Post("http://"+d.httpAddr+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("POST %s: HTTP %d %s", path, res.StatusCode, b)
		}
		return string(b)
	}

	// act, REST, MCP: box_echo; gRPC (switchboard call): box_three fails.
	post("/v1/act", `{"op":"invoke","client":"box","tool":"echo","input":{}}`)
	post("/v1/call", `{"client":"box","tool":"echo","input":"{}"}`)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "audit-test", Version: "v1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: "http://" + d.httpAddr + "/mcp", HTTPClient: web}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "box_echo", Arguments: map[string]any{}}); err != nil || res.IsError {
		t.Fatalf("MCP call: %v %v", res, err)
	}
	cs.Close()
	if _, _, code := d.run("call", addr, "--as", "alice", "--as-grade", "driver", "box_three", "{}"); code != 3 {
		t.Fatalf("switchboard call box_three: exit %d, want 3", code)
	}
	// A cancel over gRPC of a run under way.
	mb := mailboxv1.NewMailboxServiceClient(d.conn())
	asAlice := testkit.As("alice", identity.Driver)
	inv, err := mb.Invoke(asAlice, &mailboxv1.InvokeRequest{Client: "box", Tool: "sleepy", Input: "{}"})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "sleepy to be handed out", 20*time.Second, func() bool {
		st, err := mb.Status(asAlice, &mailboxv1.StatusRequest{Invocation: inv.GetInvocation()})
		return err == nil && st.GetPhase() == mailboxv1.Phase_PHASE_HANDED_OUT
	})
	if _, err := mb.Cancel(asAlice, &mailboxv1.CancelRequest{Invocation: inv.GetInvocation()}); err != nil {
		t.Fatal(err)
	}
	// Two administrative acts, the first heard by a follow as it happens.
	follow := exec.Command(bin, "audit", addr, "--follow", "--json", "--action", "grant.set")
	follow.Env = append(os.Environ(), "SWITCHBOARD_DEV_SECRET_FILE="+d.secretFile)
	followed, err := follow.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = follow.Process.Kill(); _ = follow.Wait() })
	heard := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(followed).ReadString('\n')
		heard <- line
	}()
	if _, stderr, code := d.run("grants", "set", addr, "carol", "--workspaces", "default"); code != 0 {
		t.Fatalf("grants set: %s", stderr)
	}
	select {
	case line := <-heard:
		if !strings.Contains(line, `"action":"grant.set"`) || !strings.Contains(line, `"target":"carol"`) {
			t.Fatalf("switchboard audit --follow printed %q", line)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("switchboard audit --follow printed nothing within 20s of the grant")
	}
	secretOut, stderr, code := d.run("tokens", "create", addr, "--identity", "dave", "--workspaces", "other")
	if code != 0 {
		t.Fatalf("tokens create: %s", stderr)
	}
	daveToken := strings.TrimSpace(secretOut)

	read := func(args ...string) []auditEvent {
		t.Helper()
		out, stderr, code := d.run(append([]string{"audit", addr, "--json"}, args...)...)
		if code != 0 {
			t.Fatalf("switchboard audit: exit %d, %s", code, stderr)
		}
		var events []auditEvent
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if line == "" {
				continue
			}
			var e auditEvent
			if err := json.Unmarshal([]byte(line), &e); err != nil {
				t.Fatalf("a line of switchboard audit --json: %v\n%s", err, line)
			}
			events = append(events, e)
		}
		return events
	}
	var all []auditEvent
	testkit.Eventually(t, "seven events in the trail", 20*time.Second, func() bool {
		all = read()
		return len(all) >= 7
	})
	byKey := map[string]auditEvent{}
	for _, e := range all {
		key := e.Action
		if e.Invocation != nil {
			key += " " + e.Invocation.Front + " " + e.Invocation.Tool
		}
		byKey[key] = e
	}
	want := []string{"invocation act echo", "invocation rest echo", "invocation mcp echo", "invocation grpc three", "invocation grpc sleepy", "grant.set", "token.create"}
	if len(all) != len(want) {
		t.Fatalf("the trail holds %d events, want %d: %+v", len(all), len(want), all)
	}
	for _, k := range want {
		e, ok := byKey[k]
		if !ok {
			t.Fatalf("no %q in the trail: %+v", k, all)
		}
		if e.At == "" || e.Seq == "" {
			t.Errorf("%s: no time or seq: %+v", k, e)
		}
		if inv := e.Invocation; inv != nil {
			wantOutcome, wantExit := "ok", 0
			switch inv.Tool {
			case "three":
				wantOutcome, wantExit = "failed", 3
			case "sleepy":
				wantOutcome, wantExit = "cancelled", -1
			}
			exit := -1
			if inv.ExitCode != nil {
				exit = *inv.ExitCode
			}
			if e.Actor != "alice" || e.Workspace != "default" || e.Service != "mailbox" || inv.Client != "box" || inv.PresentedName != "box_"+inv.Tool ||
				inv.Outcome != wantOutcome || exit != wantExit || inv.Deliveries != 1 || inv.Posted == "" || inv.BytesIn == "" || inv.ID == "" {
				t.Errorf("%s reads %+v %+v", k, e, *inv)
			}
			if wantOutcome != "cancelled" && inv.BytesOut == "" {
				t.Errorf("%s has no bytes out: %+v", k, *inv)
			}
			if inv.Content != nil {
				t.Errorf("%s records content in a workspace that records none: %+v", k, *inv.Content)
			}
		}
	}
	if g := byKey["grant.set"]; g.Actor != defaultAs() || g.Target != "carol" || g.Detail != "workspaces default" || g.Service != "registry" {
		t.Errorf("grant.set reads %+v", g)
	}
	if tok := byKey["token.create"]; tok.Actor != defaultAs() || !strings.HasPrefix(tok.Target, "tok-") || tok.Detail != "driver dave of other" {
		t.Errorf("token.create reads %+v", tok)
	}
	// Filters.
	if failed := read("--outcome", "failed"); len(failed) != 1 || failed[0].Invocation.Tool != "three" {
		t.Errorf("--outcome failed: %+v", failed)
	}
	if acts := read("--action", "token.create"); len(acts) != 1 {
		t.Errorf("--action token.create: %+v", acts)
	}
	// A driver sees its own events only; a token of another workspace none.
	if mine := read("--as", "alice", "--as-grade", "driver"); len(mine) != 5 {
		t.Errorf("alice sees %d events, want her 5 calls: %+v", len(mine), mine)
	}
	req, _ := http.NewRequest(http.MethodGet, "http://"+d.httpAddr+"/v1/audit", nil)
	req.Header.Set("Authorization", "Bearer "+daveToken)
	res, err := testkit.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var page struct {
		Events []json.RawMessage `json:"events"`
	}
	if res.StatusCode != http.StatusOK || json.Unmarshal(body, &page) != nil || len(page.Events) != 0 {
		t.Errorf("dave, a driver of another workspace, reads HTTP %d %s", res.StatusCode, body)
	}
	// The table form names each column, of invocations and acts alike.
	out, stderr, code := d.run("audit", addr)
	if code != 0 || !strings.Contains(out, "grant.set") || !strings.Contains(out, "box_sleepy") {
		t.Fatalf("switchboard audit: exit %d, %s\n%s", code, stderr, out)
	}
	out, _, _ = d.run("audit", addr, "--tool", "box_three")
	if !slices.ContainsFunc(strings.Split(out, "\n"), func(l string) bool {
		return strings.Contains(l, "alice") && strings.Contains(l, "box_three") && strings.Contains(l, "failed") && strings.Contains(l, "grpc")
	}) || !bytes.HasPrefix([]byte(out), []byte("TIME")) {
		t.Errorf("switchboard audit --tool box_three:\n%s", out)
	}

	auditRecordsInputsAndOutputsOnceOptedIn(t, d, web, read)
}

// auditRecordsInputsAndOutputsOnceOptedIn sets the workspace default to
// record inputs and outputs, and finds them in the events of the calls
// made after the mailbox heard of it.
func auditRecordsInputsAndOutputsOnceOptedIn(t *testing.T, d *devSuite, web *http.Client, read func(...string) []auditEvent) {
	t.Helper()
	addr := "--addr=" + d.grpcAddr
	if out, stderr, code := d.run("audit", "policy", addr, "default", "everything"); code != 2 || out != "" || !strings.Contains(stderr, `audit policy "everything" is neither io`) {
		t.Fatalf("audit policy everything: exit %d, %q %q", code, out, stderr)
	}
	if out, stderr, code := d.run("audit", "policy", addr, "default"); code != 0 || out != "metadata\n" {
		t.Fatalf("audit policy default: exit %d, %q %s", code, out, stderr)
	}
	if out, stderr, code := d.run("audit", "policy", addr, "default", "io"); code != 0 || out != "workspace default: audit policy io\n" {
		t.Fatalf("audit policy default io: exit %d, %q %s", code, out, stderr)
	}
	if out, _, _ := d.run("audit", "policy", addr, "default"); out != "io\n" {
		t.Fatalf("audit policy default reads %q after it was set", out)
	}
	// The mailbox hears of the policy through its watch: call until a
	// call's event carries what went in and came out.
	try := 0
	testkit.Eventually(t, "a call's input and output in the trail", 30*time.Second, func() bool {
		try++
		input := fmt.Sprintf(`{"secret":"s%d"}`, try)
		body, _ := json.Marshal(map[string]string{"client": "box", "tool": "echo", "input": input})
		res, err := web.Post("http://"+d.httpAddr+"/v1/call", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		for _, e := range read("--action", "invocation", "--tool", "box_echo", "--since", "1m") {
			if c := e.Invocation.Content; c != nil && c.Input == input && c.Stdout == input && e.Invocation.Front == "rest" {
				return true
			}
		}
		return false
	})
	if _, _, code := d.run("call", addr, "--as", "alice", "--as-grade", "driver", "box_three", "{}"); code != 3 {
		t.Fatalf("switchboard call box_three: exit %d, want 3", code)
	}
	testkit.Eventually(t, "the failed call's output in the trail", 20*time.Second, func() bool {
		for _, e := range read("--outcome", "failed") {
			if c := e.Invocation.Content; c != nil && c.Input == "{}" && c.Stdout == "out\n" && strings.HasSuffix(c.Stderr, "err\n") {
				return true
			}
		}
		return false
	})
	acts := read("--action", "audit.policy")
	if len(acts) != 1 || acts[0].Workspace != "default" || acts[0].Detail != "records inputs and outputs" || acts[0].Actor != defaultAs() {
		t.Errorf("--action audit.policy: %+v", acts)
	}
}
