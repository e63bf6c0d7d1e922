package badinput

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/tests/internal/procs"
)

// The rows of docs/bad-input.md about NATS: the store every service keeps
// its state in is out of reach, goes away, or holds a stream of someone
// else's. Each starts processes of its own and leaves the embedded suite
// alone, so they run in parallel, after the rows that share it.

// unreachable is a NATS address nothing listens on.
const unreachable = "nats://127.0.0.1:1"

// natsUnreachable: each service started against a NATS it cannot reach
// exits non-zero with a sentence naming the address.
func natsUnreachable(t *testing.T, _ *suite) {
	t.Parallel()
	bin := testkit.Build(t, procs.Module+"cli/cmd/switchboard")
	for _, args := range [][]string{
		{"registry", "--dev", "--listen", "127.0.0.1:0", "--nats", unreachable},
		{"mailbox", "--dev", "--listen", "127.0.0.1:0", "--registry", "127.0.0.1:1", "--nats", unreachable},
		{"dev", "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0", "--data", t.TempDir(), "--nats", unreachable},
	} {
		wantExit(t, bin, args, "cannot reach NATS at "+unreachable)
	}
}

// foreignStream: a stream named like the mailbox's first partition that
// someone else made (no layout mark) is refused at start, never reused.
func foreignStream(t *testing.T, _ *suite) {
	t.Parallel()
	ns := testkit.NATS(t)
	js := testkit.JetStream(t, ns.ClientURL())
	if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "SB_MBOX_0", Subjects: []string{"sb.rec.0.>"}}); err != nil {
		t.Fatal(err)
	}
	wantExit(t, testkit.Build(t, procs.Module+"cli/cmd/switchboard"),
		[]string{"mailbox", "--dev", "--listen", "127.0.0.1:0", "--registry", "127.0.0.1:1", "--nats", ns.ClientURL()},
		`the JetStream stream "SB_MBOX_0" exists with no Switchboard layout mark; it was made by something other than this version of Switchboard, so it is not reused: remove it, or point --nats at another cluster`)
}

// foreignBucket: a key-value bucket named sb_registry that someone else
// made is refused by the registry at start.
func foreignBucket(t *testing.T, _ *suite) {
	t.Parallel()
	ns := testkit.NATS(t)
	js := testkit.JetStream(t, ns.ClientURL())
	if _, err := js.CreateKeyValue(context.Background(), jetstream.KeyValueConfig{Bucket: "sb_registry"}); err != nil {
		t.Fatal(err)
	}
	wantExit(t, testkit.Build(t, procs.Module+"cli/cmd/switchboard"),
		[]string{"registry", "--dev", "--listen", "127.0.0.1:0", "--nats", ns.ClientURL()},
		`the key-value bucket "sb_registry" exists with no Switchboard layout mark; it was made by something other than this version of Switchboard, so it is not reused: remove it, or point --nats at another cluster`)
}

// natsLost: the NATS server a split registry and mailbox keep their state
// in stops. Meanwhile calls are refused (UNAVAILABLE) with a sentence
// naming NATS; once a server is back on the same port and storage, calls
// succeed again without a restart of the services.
func natsLost(t *testing.T, _ *suite) {
	t.Parallel()
	dir := t.TempDir()
	ns := testkit.NATSAt(t, dir, "127.0.0.1:0")
	url := ns.ClientURL()
	sp := procs.NewSplit(t, procs.Options{NATS: url, MailboxArgs: []string{"--presence-ttl", "3s"}})
	sp.Host("box", `[{"name":"echo","description":"","input_schema":{"type":"object"},"command":["cat"]}]`, 0)
	sp.WaitPresent("box", true, procs.StartTimeout)
	call := func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		res, err := sp.MB().Call(ctx, &mailboxv1.CallRequest{Client: "box", Tool: "echo", Input: `{"n":1}`})
		if err == nil && res.GetCapture().GetStdout() != `{"n":1}` {
			t.Fatalf("the call came back as %v", res)
		}
		return err
	}
	if err := call(procs.Driver()); err != nil {
		t.Fatal(err)
	}
	mcpCall := mcpSession(t, sp, "box_echo")

	ns.Shutdown()
	// A driver with a deadline of its own and one without (grpcurl), and a
	// host advertising: each hears why, long before any deadline. They ask
	// at once, so the test waits for NATS's silence only once.
	withDeadline, cancel := context.WithTimeout(procs.Driver(), 20*time.Second)
	defer cancel()
	invoke := func(ctx context.Context) func() error {
		return func() error {
			_, err := sp.MB().Invoke(ctx, &mailboxv1.InvokeRequest{Client: "box", Tool: "echo", Input: "{}"})
			return err
		}
	}
	advertise := func() error {
		_, err := sp.Reg.Advertise(testkit.As("desk", identity.Host), &registryv1.AdvertiseRequest{
			Tools: []*registryv1.Tool{{Name: "echo", Description: "", InputSchema: `{"type":"object"}`}}})
		return err
	}
	errs := within(t, invoke(withDeadline), invoke(procs.Driver()), advertise)
	for i, act := range []string{"invoke with a deadline", "invoke without one", "advertise"} {
		wantNATSRefusal(t, act, errs[i])
	}
	// By now the mailbox has noticed NATS is gone and let go of its host's
	// read (another replica may take the client over meanwhile), so even a
	// call between connected ends is refused, naming NATS, not lost.
	if err := within(t, mcpCall)[0]; err == nil || !strings.Contains(err.Error(), "cannot reach NATS") {
		t.Fatalf("an MCP tools/call with NATS gone: %v; want a refusal saying NATS cannot be reached", err)
	}

	testkit.NATSAt(t, dir, strings.TrimPrefix(url, "nats://"))
	testkit.Eventually(t, "a call to succeed once NATS is back", 60*time.Second, func() bool {
		return call(procs.Driver()) == nil
	})
}

// mcpSession starts a gateway in front of sp, joins tool's client to the
// default workspace and opens an MCP session once tool is listed; it
// returns a call of tool whose error is the refusal the client reads.
func mcpSession(t *testing.T, sp *procs.Split, tool string) func() error {
	t.Helper()
	client, _, _ := strings.Cut(tool, "_")
	if _, err := sp.Reg.RegisterClient(testkit.As("ops", identity.Admin),
		&registryv1.RegisterClientRequest{Workspace: "default", Client: client}); err != nil {
		t.Fatal(err)
	}
	sp.StartGateway()
	ctx := context.Background()
	var cs *mcp.ClientSession
	testkit.Eventually(t, tool+" listed by the MCP endpoint", procs.StartTimeout, func() bool {
		if cs == nil {
			var err error
			if cs, err = procs.MCPDriver(ctx, "http://"+sp.HTTPAddr+"/mcp", "2026-07-28"); err != nil {
				return false
			}
		}
		res, err := cs.ListTools(ctx, nil)
		return err == nil && slices.ContainsFunc(res.Tools, func(tl *mcp.Tool) bool { return tl.Name == tool })
	})
	t.Cleanup(func() { cs.Close() })
	return func() error {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
		if err != nil || !res.IsError {
			return err
		}
		return errors.New(procs.Texts(res))
	}
}

// within makes calls at once and returns their errors, failing the test
// when one has not returned after 30 s: a call without a deadline of its
// own must still be answered.
func within(t *testing.T, calls ...func() error) []error {
	t.Helper()
	errs := make([]error, len(calls))
	var wg sync.WaitGroup
	for i, call := range calls {
		wg.Go(func() { errs[i] = call() })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return errs
	case <-time.After(30 * time.Second):
		t.Fatal("a call was not answered within 30s")
		return nil
	}
}

// wantNATSRefusal checks that err is UNAVAILABLE with a sentence that
// names NATS.
func wantNATSRefusal(t *testing.T, act string, err error) {
	t.Helper()
	if status.Code(err) != codes.Unavailable || !strings.Contains(status.Convert(err).Message(), "cannot reach NATS") {
		t.Fatalf("%s with NATS gone: %v; want UNAVAILABLE saying NATS cannot be reached", act, err)
	}
	t.Logf("%s with NATS gone: %s", act, status.Convert(err).Message())
}

// wantExit runs bin with args and checks that it exits non-zero, having
// said sentence.
func wantExit(t *testing.T, bin string, args []string, sentence string) {
	t.Helper()
	p := testkit.Start(t, bin, args...)
	err := p.Exit(t, 30*time.Second)
	if err == nil || !strings.Contains(p.Output(), sentence) {
		t.Fatalf("switchboard %s: exit %v, said\n%s\nwant a non-zero exit saying %s", strings.Join(args, " "), err, p.Output(), sentence)
	}
}
