package upstream

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A call that asks for log messages hears the server's while it is the
// session's one call in flight, in every mode, at its level and above.
func TestACallHearsTheServersLogMessagesWhileAlone(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		s, _ := conformance(t, m, newEvents().options(t))
		call := func(level mcp.LoggingLevel) []string {
			var mu sync.Mutex
			var heard []string
			hear := &Hearing{Level: level, Log: func(p *mcp.LoggingMessageParams) {
				mu.Lock()
				defer mu.Unlock()
				heard = append(heard, string(p.Level)+" "+p.Data.(string))
			}}
			from, err := ParseClientParams(`{"_meta":{"io.modelcontextprotocol/logLevel":"` + string(level) + `"}}`)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			if res, err := s.Call(ctx, "test_tool_with_logging", json.RawMessage(`{}`), from, "", hear); err != nil || res.IsError {
				t.Fatalf("test_tool_with_logging: %+v, %v", res, err)
			}
			mu.Lock()
			defer mu.Unlock()
			return heard
		}
		want := []string{"info Tool execution started", "info Tool processing data", "info Tool execution completed"}
		if got := call("debug"); len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
			t.Errorf("heard %q; want %q", got, want)
		}
		if got := call("warning"); len(got) != 0 {
			t.Errorf("heard %q asking for warnings and above; want nothing", got)
		}
	})
}

// With two calls in flight a log message could be either's: neither hears it.
func TestNoCallHearsALogMessageThatCouldBeAnothers(t *testing.T) {
	t.Parallel()
	s := &Session{hearing: map[*Hearing]bool{}}
	heard := 0
	a := &Hearing{Level: "debug", Log: func(*mcp.LoggingMessageParams) { heard++ }}
	doneA := s.running(a)
	s.hearLog(&mcp.LoggingMessageParams{Level: "info", Data: "alone"})
	doneB := s.running(nil)
	s.hearLog(&mcp.LoggingMessageParams{Level: "info", Data: "with another"})
	doneB()
	s.hearLog(&mcp.LoggingMessageParams{Level: "info", Data: "alone again"})
	doneA()
	s.hearLog(&mcp.LoggingMessageParams{Level: "info", Data: "after"})
	if heard != 2 {
		t.Fatalf("heard %d messages; want the 2 logged while the call was alone", heard)
	}
}
