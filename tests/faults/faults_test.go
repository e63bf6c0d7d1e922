// Package faults kills and restarts the suite's real processes on loopback
// and checks that nothing is lost and every failure says what happened.
package faults

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/tests/internal/procs"
)

func absent(id string) string {
	return `no invocation "` + id + `" is in flight; it was answered already, it expired, or this engine restarted since it was posted — the box may have run it; read the world before acting again`
}

// A tool host killed with SIGKILL while running an invocation is started
// again; it is handed the same invocation under the same id, and the driver
// gets exactly one capture, which says it may have run twice.
func TestKilledHostGetsTheInvocationAgain(t *testing.T) {
	t.Parallel()
	s := procs.NewSplit(t, procs.Options{})
	marks := t.TempDir()
	tools := fmt.Sprintf(`[{"name":"slow","description":"","input_schema":{"type":"object"},
		"command":["sh","-c","touch %s/$SWITCHBOARD_INVOCATION.$SWITCHBOARD_DELIVERY; sleep 1; echo ran $SWITCHBOARD_DELIVERY"]}]`, marks)
	h := s.Host("laptop", tools, 0)
	s.WaitPresent("laptop", true, 20*time.Second)

	type result struct {
		res *mailboxv1.CallResponse
		err error
	}
	done := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(procs.Driver(), 60*time.Second)
		defer cancel()
		res, err := s.MB().Call(ctx, &mailboxv1.CallRequest{Client: "laptop", Tool: "slow", Input: "{}"})
		done <- result{res, err}
	}()
	var id string
	testkit.Eventually(t, "the first run to leave its mark", 20*time.Second, func() bool {
		m, _ := filepath.Glob(filepath.Join(marks, "inv-*.1"))
		if len(m) == 1 {
			id = strings.TrimSuffix(filepath.Base(m[0]), ".1")
		}
		return id != ""
	})
	h.Kill() // mid-invocation, the whole process group

	s.Host("laptop", tools, 0) // a new host process on the same client
	r := <-done
	if r.err != nil {
		t.Fatalf("call: %v", r.err)
	}
	c := r.res.GetCapture()
	if r.res.GetInvocation() != id || c.GetStdout() != "ran 2\n" || c.GetExitCode() != 0 {
		t.Fatalf("capture of %s = %v; want the same invocation (%s) run again as delivery 2", r.res.GetInvocation(), c, id)
	}
	if !strings.HasPrefix(c.GetStderr(), `this invocation was handed to "laptop" 2 times`) {
		t.Fatalf("stderr %q does not say the invocation was handed out twice", c.GetStderr())
	}
	_, err := s.MB().Capture(procs.Driver(), &mailboxv1.CaptureRequest{Invocation: id})
	if status.Convert(err).Message() != absent(id) {
		t.Fatalf("a second capture: %v; want exactly one", err)
	}
}

// The registry restarts: what it stored survives, and the mailbox's view
// of the tools recovers through the watch stream by itself.
func TestRegistryRestartKeepsStateAndTheMailboxViewRecovers(t *testing.T) {
	t.Parallel()
	s := procs.NewSplit(t, procs.Options{})
	asHost := testkit.As("desk", identity.Host)
	tool := &registryv1.Tool{Name: "grep", Description: "", InputSchema: `{"type":"object"}`}
	if _, err := s.Reg.Advertise(asHost, &registryv1.AdvertiseRequest{Tools: []*registryv1.Tool{tool}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.MB().Invoke(procs.Driver(), &mailboxv1.InvokeRequest{Client: "desk", Tool: "grep", Input: "{}"}); err != nil {
		t.Fatal(err)
	}
	s.RegProc.Kill()
	s.StartRegistry()
	res, err := s.Reg.ListTools(procs.Driver(), &registryv1.ListToolsRequest{Workspace: "default"})
	if err != nil || len(res.GetTools()) != 1 || res.GetTools()[0].GetPresentedName() != "desk_grep" {
		t.Fatalf("after the restart ListTools = %v, %v", res, err)
	}
	// Withdraw the tool. Only a view fed by a fresh watch stream can know:
	// a stale view would still accept the invoke.
	if _, err := s.Reg.Advertise(asHost, &registryv1.AdvertiseRequest{}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the mailbox to see desk's grep gone", 20*time.Second, func() bool {
		_, err := s.MB().Invoke(procs.Driver(), &mailboxv1.InvokeRequest{Client: "desk", Tool: "grep", Input: "{}"})
		return status.Convert(err).Message() == `client "desk" advertises no tool "grep" right now`
	})
}

// The mailbox is killed and started again. A driver waiting on it gets
// UNAVAILABLE at once, not a hang. Nothing it held is lost: an invocation
// the host was running is completed to the restarted mailbox, one queued
// for a host that was away is handed to it when it comes, and both are
// collected with the handles from before.
func TestMailboxRestartLosesNothing(t *testing.T) {
	t.Parallel()
	s := procs.NewSplit(t, procs.Options{})
	s.Host("laptop", `[{"name":"slow","description":"","input_schema":{"type":"object"},"command":["sh","-c","sleep 2; cat"]},
		{"name":"echo","description":"","input_schema":{"type":"object"},"command":["cat"]}]`, 0)
	s.WaitPresent("laptop", true, 20*time.Second)
	// desk has advertised, but no host of it runs yet.
	deskTools := `[{"name":"echo","description":"","input_schema":{"type":"object"},"command":["cat"]}]`
	echo := &registryv1.Tool{Name: "echo", Description: "", InputSchema: `{"type":"object"}`}
	if _, err := s.Reg.Advertise(testkit.As("desk", identity.Host), &registryv1.AdvertiseRequest{Tools: []*registryv1.Tool{echo}}); err != nil {
		t.Fatal(err)
	}
	running, err := s.MB().Invoke(procs.Driver(), &mailboxv1.InvokeRequest{Client: "laptop", Tool: "slow", Input: `{"running":1}`})
	if err != nil {
		t.Fatal(err)
	}
	queued, err := s.MB().Invoke(procs.Driver(), &mailboxv1.InvokeRequest{Client: "desk", Tool: "echo", Input: `{"queued":1}`})
	if err != nil {
		t.Fatal(err)
	}
	waiting := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(procs.Driver(), 60*time.Second)
		defer cancel()
		_, err := s.MB().Call(ctx, &mailboxv1.CallRequest{Client: "laptop", Tool: "slow", Input: "{}"})
		waiting <- err
	}()
	testkit.Eventually(t, "the call to reach the mailbox", 10*time.Second, func() bool {
		res, err := s.Reg.GetClient(procs.Driver(), &registryv1.GetClientRequest{Client: "laptop"})
		return err == nil && res.GetRow().GetPresent()
	})
	s.Mailboxes[0].Proc.Kill()
	select {
	case err := <-waiting:
		if status.Code(err) != codes.Unavailable {
			t.Fatalf("the waiting driver got %v; want UNAVAILABLE", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting driver hung after the mailbox died")
	}
	s.StartMailbox(0)
	s.Host("desk", deskTools, 0)
	for _, c := range []struct {
		id, want string
	}{{running.GetInvocation(), `{"running":1}`}, {queued.GetInvocation(), `{"queued":1}`}} {
		var got *mailboxv1.CaptureResponse
		testkit.Eventually(t, "the capture of "+c.want, 60*time.Second, func() bool {
			got, err = s.MB().Capture(procs.Driver(), &mailboxv1.CaptureRequest{Invocation: c.id, Wait: durationpb.New(10 * time.Second)})
			return err == nil && got.GetCapture() != nil
		})
		if got.GetCapture().GetStdout() != c.want {
			t.Fatalf("the capture of %s after the restart: %v", c.want, got)
		}
	}
	testkit.Eventually(t, "a call to laptop to succeed again", 20*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(procs.Driver(), 10*time.Second)
		defer cancel()
		res, err := s.MB().Call(ctx, &mailboxv1.CallRequest{Client: "laptop", Tool: "echo", Input: `{"after":1}`})
		return err == nil && res.GetCapture().GetStdout() == `{"after":1}`
	})
}

// With the mailbox stopped, HTTP clients of the gateway get 503 with a
// sentence quickly; once it is back, the gateway serves again without a
// restart of its own.
func TestGatewayAnswers503WhileTheMailboxIsDownAndRecovers(t *testing.T) {
	t.Parallel()
	s := procs.NewSplit(t, procs.Options{})
	s.StartGateway()
	asHost := testkit.As("laptop", identity.Host)
	tool := &registryv1.Tool{Name: "echo", Description: "", InputSchema: `{"type":"object"}`}
	if _, err := s.Reg.Advertise(asHost, &registryv1.AdvertiseRequest{Tools: []*registryv1.Tool{tool}, Session: proto.String("x")}); err != nil {
		t.Fatal(err)
	}
	invoke := func() (int, string, error) {
		req, _ := http.NewRequest(http.MethodPost, "http://"+s.HTTPAddr+"/v1/act",
			bytes.NewBufferString(`{"op":"invoke","client":"laptop","tool":"echo","input":{}}`))
		req.Header.Set("Switchboard-Identity", "driver")
		client := &http.Client{Timeout: 30 * time.Second}
		res, err := client.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b), nil
	}
	testkit.Eventually(t, "the gateway to route an invoke", 20*time.Second, func() bool { code, _, err := invoke(); return err == nil && code == http.StatusOK })

	s.Mailboxes[0].Proc.Kill()
	start := time.Now()
	code, body, err := invoke()
	if err != nil || code != http.StatusServiceUnavailable || !strings.HasPrefix(body, `{"ok":false,"error":"`) {
		t.Fatalf("with the mailbox down: %d %s %v; want 503 and the envelope", code, body, err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("the 503 took %v", took)
	}
	s.StartMailbox(0)
	testkit.Eventually(t, "the gateway to route an invoke once the mailbox is back", 20*time.Second, func() bool { code, _, err := invoke(); return err == nil && code == http.StatusOK })

}
