package bridge

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	durationpbpkg "google.golang.org/protobuf/types/known/durationpb"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

func syscallKill0(pid int) error { return syscall.Kill(pid, 0) }

// blocker is a real MCP server, built on the official SDK and served over
// Streamable HTTP, whose "hold" tool runs until it is released or its call
// is cancelled. None of the pinned servers has a tool that runs long enough
// to cancel, or to fill max_in_flight.
type blocker struct {
	url       string
	started   chan string
	cancelled chan string
	release   chan struct{}
	// mute, while set, leaves pings unanswered; running and most count
	// the calls the server holds now and at most.
	mute          atomic.Bool
	gone          chan struct{} // closed when the test ends: muted pings return
	mu            sync.Mutex
	running, most int
}

// hold is the "hold" tool's handler: it runs until released or cancelled.
func (b *blocker) hold(ctx context.Context, _ *mcp.CallToolRequest, in holdArgs) (*mcp.CallToolResult, any, error) {
	b.mu.Lock()
	b.running++
	b.most = max(b.most, b.running)
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		b.running--
		b.mu.Unlock()
	}()
	b.started <- in.ID
	select {
	case <-ctx.Done():
		b.cancelled <- in.ID
		return nil, nil, ctx.Err()
	case <-b.release:
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "released " + in.ID}}}, nil, nil
	}
}

// muting leaves a ping unanswered while mute is set, until its caller
// gives up on it.
func (b *blocker) muting(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "ping" && b.mute.Load() {
			select { // the session's context may outlive the request
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-b.gone:
				return nil, errors.New("the test has ended")
			}
		}
		return next(ctx, method, req)
	}
}

type holdArgs struct {
	ID string `json:"id"`
}

func newBlocker(t *testing.T) *blocker {
	t.Helper()
	b := &blocker{started: make(chan string, 100), cancelled: make(chan string, 100), release: make(chan struct{}), gone: make(chan struct{})}
	server := mcp.NewServer(&mcp.Implementation{Name: "blocker", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "hold", Description: "runs until released or cancelled"}, b.hold)
	server.AddReceivingMiddleware(b.muting)
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	// The bridge holds a standalone SSE stream open: end it, or Close
	// waits for it.
	t.Cleanup(func() { close(b.gone); srv.CloseClientConnections(); srv.Close() })
	b.url = srv.URL
	return b
}

func (b *blocker) awaitStarted(t *testing.T) string {
	t.Helper()
	select {
	case id := <-b.started:
		return id
	case <-time.After(10 * time.Second):
		t.Fatal("no call reached the server")
		return ""
	}
}

func (s *suite) invoke(t *testing.T, client, tool, input string) string {
	t.Helper()
	res, err := s.mb.Invoke(driver, &mailboxv1.InvokeRequest{Client: client, Tool: tool, Input: input})
	if err != nil {
		t.Fatal(err)
	}
	return res.GetInvocation()
}

func TestACancelledInvocationIsCancelledUpstream(t *testing.T) {
	t.Parallel()
	b := newBlocker(t)
	s := newSuite(t, timing{}) // stopped first, before the server it calls
	s.mount(t, "slow", httpServer(b.url))
	id := s.invoke(t, "slow", "hold", `{"id":"one"}`)
	b.awaitStarted(t)
	if row := s.row(t, "slow"); row.GetInFlight() != 1 {
		t.Errorf("in_flight = %d while the call runs", row.GetInFlight())
	}
	res, err := s.mb.Cancel(driver, &mailboxv1.CancelRequest{Invocation: id})
	if err != nil {
		t.Fatal(err)
	}
	if res.GetCapture().GetExitCode() != capture.ExitCancelled {
		t.Errorf("the cancelled capture = %v", res.GetCapture())
	}
	select {
	case got := <-b.cancelled:
		if got != "one" {
			t.Errorf("cancelled %q", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server's handler was never cancelled: notifications/cancelled did not arrive")
	}
	testkit.Eventually(t, "in_flight back to 0", 20*time.Second, func() bool { return s.row(t, "slow").GetInFlight() == 0 })
	if !contains(s.row(t, "slow").GetNotices(), "invocation "+id+" was cancelled by its poster") {
		t.Errorf("notices = %q", s.row(t, "slow").GetNotices())
	}
}

func TestMaxInFlightBoundsConcurrentCalls(t *testing.T) {
	t.Parallel()
	b := newBlocker(t)
	s := newSuite(t, timing{}) // stopped first, before the server it calls
	s.mount(t, "slow", &bridgev1.ServerConfig{Transport: httpServer(b.url).Transport, MaxInFlight: 2})
	ids := []string{s.invoke(t, "slow", "hold", `{"id":"a"}`), s.invoke(t, "slow", "hold", `{"id":"b"}`), s.invoke(t, "slow", "hold", `{"id":"c"}`)}
	b.awaitStarted(t)
	b.awaitStarted(t)
	select {
	case id := <-b.started:
		t.Fatalf("a third call (%s) ran with max_in_flight 2", id)
	case <-time.After(200 * time.Millisecond):
	}
	if row := s.row(t, "slow"); row.GetInFlight() != 2 {
		t.Errorf("in_flight = %d, want 2", row.GetInFlight())
	}
	close(b.release) // every held call, and the third when it starts, returns
	b.awaitStarted(t)
	for _, id := range ids {
		res, err := s.mb.Capture(driver, &mailboxv1.CaptureRequest{Invocation: id, Wait: durationpb(10 * time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		if res.GetCapture().GetExitCode() != 0 || res.GetCapture().GetStdout()[:9] != "released " {
			t.Errorf("capture of %s = %v", id, res.GetCapture())
		}
	}
}

// A tool the server does not list now is refused before it is forwarded.
func TestAToolTheServerNoLongerListsIsRefusedBeforeItIsSent(t *testing.T) {
	t.Parallel()
	b := newBlocker(t)
	s := newSuite(t, timing{}) // stopped first, before the server it calls
	s.mount(t, "slow", httpServer(b.url))
	s.svc.mu.Lock()
	m := s.svc.entries["slow"].mounted()
	s.svc.mu.Unlock()
	m.mu.Lock()
	sess := m.sess
	m.mu.Unlock()
	c, answer := m.serve(context.Background(), sess, &mailboxv1.Invocation{Invocation: "inv-x", Tool: "gone", Input: `{}`})
	if !answer || c.GetExitCode() != capture.ExitNotFound ||
		c.GetStderr() != `MCP server "slow" does not list a tool "gone" now, so it was not called` {
		t.Errorf("capture = %v, answer %v", c, answer)
	}
	select {
	case id := <-b.started:
		t.Errorf("the server was called (%s)", id)
	default:
	}
}

func durationpb(d time.Duration) *durationpbpkg.Duration { return durationpbpkg.New(d) }
