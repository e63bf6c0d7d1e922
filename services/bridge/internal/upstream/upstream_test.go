package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/bridge/internal/results"
	"github.com/switchboard-run/switchboard/services/bridge/internal/ring"
)

// The conformance server's tools, in every mode.
func TestConformanceServerInEveryMode(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			ev := newEvents()
			s, _ := conformance(t, m, ev.options(t))

			info := s.Info()
			if !slices.Contains(mcp.SupportedProtocolVersions(), info.ProtocolVersion) {
				t.Errorf("negotiated protocol %q is not one the SDK supports", info.ProtocolVersion)
			}
			if info.ServerName != "mcp-conformance-test-server" || info.ServerVersion != "1.0.0" {
				t.Errorf("server info = %+v", info)
			}
			if (m == httpSession) != (info.SessionID != "") {
				t.Errorf("session id %q in mode %s", info.SessionID, m)
			}
			names := toolNames(s.Tools())
			for _, want := range []string{"test_simple_text", "test_image_content", "test_error_handling", "test_tool_with_progress", "test_trigger_tool_change"} {
				if !names[want] {
					t.Errorf("tool %q is not listed; got %d tools", want, len(names))
				}
			}

			t.Run("text goes to stdout", func(t *testing.T) {
				got := call(t, s, "test_simple_text", `{}`)
				if got.GetStdout() != "This is a simple text response for testing." || got.GetExitCode() != 0 {
					t.Errorf("capture = %v", got)
				}
			})
			t.Run("an image is named", func(t *testing.T) {
				if got := call(t, s, "test_image_content", `{}`); got.GetStdout() != "[image content]" {
					t.Errorf("capture = %v", got)
				}
			})
			t.Run("an embedded text resource is carried as text", func(t *testing.T) {
				got := call(t, s, "test_multiple_content_types", `{}`)
				if want := "This is text content\n[image content]\nThis is an embedded resource"; got.GetStdout() != want {
					t.Errorf("stdout = %q, want %q", got.GetStdout(), want)
				}
			})
			t.Run("isError is exit 1 with the message on stderr", func(t *testing.T) {
				got := call(t, s, "test_error_handling", `{}`)
				if got.GetExitCode() != 1 || got.GetStderr() != "this tool intentionally returns an error for testing" || got.GetStdout() != "" {
					t.Errorf("capture = %v", got)
				}
			})
			t.Run("progress is surfaced under the call's token", func(t *testing.T) {
				got := call(t, s, "test_tool_with_progress", `{}`)
				if got.GetStdout() != "inv-test" {
					t.Errorf("stdout = %q, want the progress token echoed", got.GetStdout())
				}
				ev.await(t, "three progress notices", func(e *events) bool {
					return hasPrefix(e.notices, "progress inv-test: 0/100 Completed step 0 of 100") &&
						hasPrefix(e.notices, "progress inv-test: 50/100") && hasPrefix(e.notices, "progress inv-test: 100/100")
				})
			})
			t.Run("log messages are surfaced", func(t *testing.T) {
				call(t, s, "test_tool_with_logging", `{}`)
				ev.await(t, "the tool's log messages", func(e *events) bool {
					return hasPrefix(e.notices, "log info: Tool execution started") && hasPrefix(e.notices, "log info: Tool execution completed")
				})
			})
			t.Run("an unknown tool is a JSON-RPC error, named", func(t *testing.T) {
				_, err := s.Call(context.Background(), "no_such_tool", json.RawMessage(`{}`), nil, "", nil)
				var rpcErr *jsonrpc.Error
				if !errors.As(err, &rpcErr) {
					t.Fatalf("err = %v, want a JSON-RPC error", err)
				}
				got := results.FromError(err, "conf", "no_such_tool", 0)
				if got.GetExitCode() != 1 || !strings.Contains(got.GetStderr(), "JSON-RPC error") || !strings.Contains(got.GetStderr(), `unknown tool "no_such_tool"`) {
					t.Errorf("capture = %v", got)
				}
			})
			t.Run("tools/list_changed is followed by a re-listing", func(t *testing.T) {
				call(t, s, "test_trigger_tool_change", `{}`)
				ev.await(t, "a re-listing with the new tool", func(e *events) bool {
					return len(e.tools) > 0 && toolNames(e.tools[len(e.tools)-1])["__transient_tool_for_list_changed"]
				})
				if !toolNames(s.Tools())["__transient_tool_for_list_changed"] {
					t.Error("Tools() does not hold the re-listed tool")
				}
			})
			select {
			case <-s.Done():
				t.Fatalf("the session ended: %v", s.Err())
			default:
			}
		})
	}
}

// call runs a tool with the invocation-style progress token "inv-test".
func call(t *testing.T, s *Session, tool, input string) interface {
	GetStdout() string
	GetStderr() string
	GetExitCode() int32
} {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	res, err := s.Call(ctx, tool, json.RawMessage(input), nil, "inv-test", nil)
	if err != nil {
		t.Fatalf("Call(%q): %v", tool, err)
	}
	return results.FromResult(res, 0)
}

// The SDK's example server names tools with spaces and parentheses and
// returns structured content.
func TestExampleServerWithSpacesInToolNames(t *testing.T) {
	t.Parallel()
	tail := ring.NewTail(64, 16<<10)
	opts := newEvents().options(t)
	opts.Stderr = tail
	s := open(t, stdioConfig(testkit.Tool(t, "everything")), opts)
	names := toolNames(s.Tools())
	for _, want := range []string{"greet", "greet (structured)", "greet (content with ResourceLink)"} {
		if !names[want] {
			t.Errorf("tool %q is not listed: %v", want, names)
		}
	}
	res, err := s.Call(context.Background(), "greet (structured)", json.RawMessage(`{"name":"bob"}`), nil, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if sc, ok := res.StructuredContent.(map[string]any); !ok || sc["message"] != "Hi bob" {
		t.Errorf("structuredContent = %#v, want message Hi bob", res.StructuredContent)
	}
	if got := results.FromResult(res, 0); got.GetStdout() != `{"message":"Hi bob"}` {
		t.Errorf("stdout = %q", got.GetStdout())
	}
	res, err = s.Call(context.Background(), "greet (content with ResourceLink)", json.RawMessage(`{"name":"bob"}`), nil, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := results.FromResult(res, 0); got.GetStdout() != "[resource_link content: data:text/plain,Hi%20bob]" {
		t.Errorf("stdout = %q", got.GetStdout())
	}
	// This server logs its JSON-RPC traffic on stderr: the tail keeps it.
	// The last call's request is looked for (an earlier one may already be
	// pushed out of the bounded tail by the big lines after it), and waited
	// for: the answer can arrive before the stderr reader has copied the
	// line the server wrote before answering.
	testkit.Await(t, "the call's trace on stderr", 10*time.Second, func() error {
		if s := tail.String(); !strings.Contains(s, "greet (content with ResourceLink)") {
			return fmt.Errorf("stderr tail holds no trace of the call: %q", s)
		}
		return nil
	})
}

func TestCancellingACallEndsItAndKeepsTheSession(t *testing.T) {
	t.Parallel()
	ev := newEvents()
	s, _ := conformance(t, stdio, ev.options(t))
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := s.Call(ctx, "test_tool_with_progress", json.RawMessage(`{}`), nil, "inv-cancel", nil)
		errc <- err
	}()
	ev.await(t, "the first progress notice", func(e *events) bool { return hasPrefix(e.notices, "progress inv-cancel: 0/100") })
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled call returned %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the cancelled call did not return")
	}
	if got := call(t, s, "test_simple_text", `{}`); got.GetExitCode() != 0 {
		t.Errorf("the session is unusable after a cancel: %v", got)
	}
}

func TestAServerThatExitsAtOnceDoesNotOpen(t *testing.T) {
	t.Parallel()
	tail := ring.NewTail(64, 16<<10)
	_, err := Open(context.Background(), stdioConfig("/bin/sh", "-c", "echo boom >&2; exit 3"), Options{Stderr: tail})
	if err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("Open error = %v, want it to carry the exit status", err)
	}
	if tail.String() != "boom" {
		t.Errorf("stderr tail = %q, want boom", tail.String())
	}
	_, err = Open(context.Background(), stdioConfig("/no/such/server"), Options{})
	if err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("Open of a missing program = %v", err)
	}
}

// A server without the tools capability opens with no tools, rather than
// failing on a tools/list it never offered.
func TestAServerWithoutToolsOpensEmpty(t *testing.T) {
	t.Parallel()
	server := mcp.NewServer(&mcp.Implementation{Name: "prompts-only", Version: "1"}, nil)
	server.AddPrompt(&mcp.Prompt{Name: "hello"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	s := open(t, httpConfig(srv.URL, nil), newEvents().options(t))
	if n := len(s.Tools()); n != 0 {
		t.Errorf("got %d tools", n)
	}
	if s.Info().ServerName != "prompts-only" {
		t.Errorf("info = %+v", s.Info())
	}
}

// A call's progress notifications reach the function given with it, in the
// order the server sent them, as well as the mount's notices; a call given
// none, and another token, see nothing of them.
func TestACallsProgressReachesItsOwnFunction(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		ev := newEvents()
		s, _ := conformance(t, m, ev.options(t))
		var mu sync.Mutex
		var got []string
		collect := func(p *mcp.ProgressNotificationParams) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, fmt.Sprintf("%g/%g %s", p.Progress, p.Total, p.Message))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		other := make(chan []string, 1)
		go func() { // a concurrent call under another token sees only its own
			var mine []string
			_, _ = s.Call(ctx, "test_simple_text", json.RawMessage(`{}`), nil, "inv-other",
				&Hearing{Progress: func(p *mcp.ProgressNotificationParams) { mine = append(mine, fmt.Sprint(p.ProgressToken)) }})
			other <- mine
		}()
		if _, err := s.Call(ctx, "test_tool_with_progress", json.RawMessage(`{}`), nil, "inv-progress", &Hearing{Progress: collect}); err != nil {
			t.Fatal(err)
		}
		ev.await(t, "the last progress notice", func(e *events) bool {
			return hasPrefix(e.notices, "progress inv-progress: 100/100 Completed step 100 of 100")
		})
		mu.Lock()
		want := []string{"0/100 Completed step 0 of 100", "50/100 Completed step 50 of 100", "100/100 Completed step 100 of 100"}
		if !slices.Equal(got, want) {
			t.Errorf("progress seen by the call: %q; want %q", got, want)
		}
		mu.Unlock()
		if mine := <-other; len(mine) != 0 {
			t.Errorf("the other call saw progress %q; want none", mine)
		}
		if _, err := s.Call(ctx, "test_tool_with_progress", json.RawMessage(`{}`), nil, "inv-progress", nil); err != nil {
			t.Fatalf("a call without a progress function: %v", err)
		}
	})
}
