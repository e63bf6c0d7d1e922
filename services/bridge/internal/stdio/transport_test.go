package stdio

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// shortGrace keeps Close quick for servers that ignore their stdin.
const shortGrace = 50 * time.Millisecond

// connect starts script under /bin/sh as the server.
func connect(t *testing.T, script string, maxLine int) (mcp.Connection, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	c, err := (&Transport{Command: cmd, TerminateDuration: shortGrace, MaxLineLength: maxLine}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, cmd
}

func request(t *testing.T, n int64, method string) *jsonrpc.Request {
	t.Helper()
	return &jsonrpc.Request{ID: id(t, float64(n)), Method: method, Params: []byte(`{"a":"b"}`)}
}

// id is the request id of v, a float64 (as JSON numbers decode) or a string.
func id(t *testing.T, v any) jsonrpc.ID {
	t.Helper()
	id, err := jsonrpc.MakeID(v)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// What the bridge writes is one line the server reads back as it was
// written (cat echoes it).
func TestAMessageMakesTheRoundTrip(t *testing.T) {
	t.Parallel()
	c, _ := connect(t, "exec cat", 0)
	ctx := context.Background()
	for i := range int64(3) {
		if err := c.Write(ctx, request(t, i+1, "tools/call")); err != nil {
			t.Fatal(err)
		}
		got, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if r, ok := got.(*jsonrpc.Request); !ok || r.ID.Raw() != i+1 || r.Method != "tools/call" || string(r.Params) != `{"a":"b"}` {
			t.Fatalf("read back %#v", got)
		}
	}
}

// A line longer than the bound is an error that names the bound, whether
// it ends or never does, and the bridge stops reading there.
func TestALineLongerThanTheBoundIsAnErrorNamingIt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, script string }{
		{"a long line", `head -c 5000 /dev/zero | tr '\0' a; echo; exec cat >/dev/null`},
		{"a line that never ends", `exec tr '\0' a </dev/zero`},
		{"a line within the buffer but over the bound", `head -c 1030 /dev/zero | tr '\0' a; echo; exec cat >/dev/null`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, _ := connect(t, tc.script, 1024)
			_, err := c.Read(context.Background())
			if err == nil || !strings.Contains(err.Error(), "longer than 1024 bytes") {
				t.Fatalf("Read: %v, want the bound named", err)
			}
		})
	}
}

// A line of exactly the bound is read.
func TestALineOfTheBoundIsRead(t *testing.T) {
	t.Parallel()
	msg := `{"jsonrpc":"2.0","id":1,"result":{"s":"` // padded to 1024 below
	line := msg + strings.Repeat("x", 1024-len(msg)-3) + `"}}`
	c, _ := connect(t, "printf '%s\\r\\n' '"+line+"'; exec cat >/dev/null", 1024)
	if _, err := c.Read(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// A server that writes something other than JSON-RPC ends the connection
// with the parse error; the SDK's client does not hang on it.
func TestAServerThatWritesGarbageIsRefused(t *testing.T) {
	t.Parallel()
	c, _ := connect(t, "echo 'Starting server on stdio...'; exec cat >/dev/null", 0)
	if _, err := c.Read(context.Background()); err == nil || !strings.Contains(err.Error(), "unmarshaling jsonrpc message") {
		t.Fatalf("Read: %v, want a parse error", err)
	}

	cmd := exec.Command("/bin/sh", "-c", "read line; echo 'Starting server on stdio...'; exec cat >/dev/null")
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v1"}, nil)
	if _, err := client.Connect(context.Background(), &Transport{Command: cmd, TerminateDuration: shortGrace}, nil); err == nil {
		t.Fatal("initialising against a server writing garbage succeeded")
	}
}

// A server that exits while a call is running ends the call with an error.
func TestAServerThatExitsMidCallEndsTheCall(t *testing.T) {
	t.Parallel()
	// It refuses server/discover (so the client falls back to initialize),
	// answers initialize, and exits at the tool call without answering.
	script := `while read -r line; do
id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
case "$line" in
*'"method":"initialize"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"quitter","version":"1"}}}\n' "$id";;
*'"method":"tools/call"'*) exit 4;;
*'"method":"notifications/'*) ;;
*) printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}\n' "$id";;
esac
done`
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v1"}, nil)
	cmd := exec.Command("/bin/sh", "-c", script)
	cs, err := client.Connect(context.Background(), &Transport{Command: cmd, TerminateDuration: shortGrace}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "anything"}); err == nil {
		t.Fatal("the call succeeded though the server exited")
	}
	_ = cs.Close()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 4 {
		t.Errorf("the process state after Close is %v, want exit status 4", cmd.ProcessState)
	}
}

// Close unblocks a Read waiting on a server that writes nothing, and a
// server that ignores its stdin closing and SIGTERM is killed. Each grace
// is long enough for a loaded machine to run and reap the process (50ms
// was not, at a load of 18 on 2 cores); the first is only an upper bound.
func TestCloseUnblocksARead(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, script, ended string
		grace               time.Duration
	}{
		{"a server that exits when its stdin closes", "exec cat >/dev/null", "exit status 0", 30 * time.Second},
		{"a server that ignores its stdin and SIGTERM", "trap '' TERM; exec sleep 600", "signal: killed", time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command("/bin/sh", "-c", tc.script)
			c, err := (&Transport{Command: cmd, TerminateDuration: tc.grace}).Connect(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			read := make(chan error, 1)
			go func() {
				_, err := c.Read(context.Background())
				read <- err
			}()
			_ = c.Close()
			if err := <-read; !errors.Is(err, io.EOF) {
				t.Errorf("Read after Close: %v, want io.EOF", err)
			}
			if got := cmd.ProcessState.String(); got != tc.ended {
				t.Errorf("the server ended with %q, want %q", got, tc.ended)
			}
			if err := c.Write(context.Background(), request(t, 1, "ping")); !errors.Is(err, mcp.ErrConnectionClosed) {
				t.Errorf("Write after Close: %v, want %v", err, mcp.ErrConnectionClosed)
			}
		})
	}
}

// A Read's context ending unblocks it too. The server keeps its stdout
// open and silent (cat, sent nothing): one that closed it would end the
// Read with EOF first.
func TestAnEndedContextUnblocksARead(t *testing.T) {
	t.Parallel()
	c, _ := connect(t, "exec cat", 0)
	ctx, cancel := context.WithCancel(context.Background())
	read := make(chan error, 1)
	go func() {
		_, err := c.Read(ctx)
		read <- err
	}()
	cancel()
	if err := <-read; !errors.Is(err, context.Canceled) {
		t.Errorf("Read: %v, want context.Canceled", err)
	}
}

// The requests of a batch are answered in one array, once all answers are
// in, in the batch's order.
func TestABatchIsAnsweredAsOne(t *testing.T) {
	t.Parallel()
	batch := `[{"jsonrpc":"2.0","id":7,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/message","params":{}},{"jsonrpc":"2.0","id":"x","method":"roots/list"}]`
	c, _ := connect(t, "printf '%s\\n' '"+batch+"'; exec cat", 0)
	ctx := context.Background()
	var ids []any
	for range 3 {
		m, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.(*jsonrpc.Request).ID.Raw())
	}
	if ids[0] != int64(7) || ids[1] != nil || ids[2] != "x" {
		t.Fatalf("read ids %v, want [7 <nil> x]", ids)
	}
	// Answered out of order; cat echoes what was written.
	for _, v := range []any{"x", float64(7)} {
		if err := c.Write(ctx, &jsonrpc.Response{ID: id(t, v), Result: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []any{int64(7), "x"} {
		m, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if r, ok := m.(*jsonrpc.Response); !ok || r.ID.Raw() != want {
			t.Fatalf("read back %#v, want the answer to %v", m, want)
		}
	}
}
