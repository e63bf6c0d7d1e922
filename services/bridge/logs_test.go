package bridge

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/contract"
)

// A server's log message becomes a note the mailbox takes: data as JSON,
// a logger cut to its bound, data over its bound replaced by a sentence.
func TestALogMessageBecomesANoteTheMailboxTakes(t *testing.T) {
	t.Parallel()
	var got *mailboxv1.LogMessage
	note := upstreamLog(func(l *mailboxv1.LogMessage) { got = l })
	note(&mcp.LoggingMessageParams{Level: "warning", Logger: "db", Data: map[string]any{"slow": true}})
	if got.GetLevel() != "warning" || got.GetLogger() != "db" || got.GetData() != `{"slow":true}` {
		t.Fatalf("note = %v", got)
	}
	note(&mcp.LoggingMessageParams{Level: "info", Logger: strings.Repeat("é", contract.MaxLogLogger), Data: strings.Repeat("x", contract.MaxLogData)})
	if len(got.GetLogger()) > contract.MaxLogLogger || !strings.HasPrefix(got.GetLogger(), "éé") || strings.ContainsRune(got.GetLogger(), '\uFFFD') {
		t.Fatalf("a long logger became %q (%d bytes); want it cut to %d bytes of whole characters", got.GetLogger(), len(got.GetLogger()), contract.MaxLogLogger)
	}
	if want := `"[a log message of 4098 bytes, more than the 4096 passed on to the caller]"`; got.GetData() != want {
		t.Fatalf("large data became %s; want %s", got.GetData(), want)
	}
}
