package observe

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchboard-run/switchboard/kit/suite/telemetry"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// metaServer is a real MCP server (the official SDK's, over Streamable
// HTTP) whose one tool answers with the traceparent its request's _meta
// carried.
func metaServer(t *testing.T) string {
	t.Helper()
	server := mcp.NewServer(&mcp.Implementation{Name: "meta", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "traceparent", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			tp, _ := req.Params.GetMeta()["traceparent"].(string)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: tp}}}, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	return srv.URL
}

// spansOf returns the ended spans of one trace.
func spansOf(exp *tracetest.InMemoryExporter, traceID string) tracetest.SpanStubs {
	var out tracetest.SpanStubs
	for _, s := range exp.GetSpans() {
		if s.SpanContext.TraceID().String() == traceID {
			out = append(out, s)
		}
	}
	return out
}

// spansUntil returns the ended spans of one trace once done says they are
// all there, failing after ten seconds with the names it has.
func spansUntil(t *testing.T, exp *tracetest.InMemoryExporter, traceID string, done func(tracetest.SpanStubs) bool) tracetest.SpanStubs {
	t.Helper()
	var spans tracetest.SpanStubs
	testkit.Await(t, "the spans of trace "+traceID, 10*time.Second, func() error {
		if spans = spansOf(exp, traceID); done(spans) {
			return nil
		}
		names := make([]string, len(spans))
		for i, s := range spans {
			names[i] = s.Name
		}
		return fmt.Errorf("ended so far: %s", strings.Join(names, ", "))
	})
	return spans
}

// has reports whether spans hold one named name of kind.
func has(spans tracetest.SpanStubs, name string, kind trace.SpanKind) bool {
	for _, s := range spans {
		if s.Name == name && s.SpanKind == kind {
			return true
		}
	}
	return false
}

// find returns the one span named name (failing the test otherwise).
func find(t *testing.T, spans tracetest.SpanStubs, name string, kind trace.SpanKind) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name && s.SpanKind == kind {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		var names []string
		for _, s := range spans {
			names = append(names, s.Name+"/"+s.SpanKind.String())
		}
		t.Fatalf("%d spans named %q (%s), want 1; the trace holds %v", len(found), name, kind, names)
	}
	return found[0]
}

// One call from HTTP through the mailbox to the host that ran it is one
// trace: the run is a child of the Invoke that posted it, though it
// happened later on another connection; the tool saw the run's
// TRACEPARENT, and an MCP server its _meta.traceparent.
func TestOneCallIsOneTraceAcrossTheAsynchronousHop(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	s := newSuite(t, telemetry.NewWith(exp, "switchboard"))
	if code, body := s.send(t, http.MethodPut, "/v1/servers/meta", admin, `{"http":{"url":"`+metaServer(t)+`"}}`); code != http.StatusOK {
		t.Fatalf("mounting the meta server: %d %s", code, body)
	}

	for _, c := range []struct{ client, tool, traceID string }{
		{"box", "traceparent", "4bf92f3577b34da6a3ce929d0e0e4736"},
		{"meta", "traceparent", "0af7651916cd43dd8448eb211c80319c"},
	} {
		t.Run(c.client, func(t *testing.T) {
			h := driver.Clone()
			h.Set("Traceparent", "00-"+c.traceID+"-00f067aa0ba902b7-01")
			got := s.call(t, c.client, c.tool, h)
			// The host ends its run's spans once its Complete is receipted,
			// which may be after the driver already has the capture.
			spans := spansUntil(t, exp, c.traceID, func(spans tracetest.SpanStubs) bool {
				return has(spans, "run "+c.tool, trace.SpanKindConsumer) &&
					has(spans, "switchboard.mailbox.v1.MailboxService/Complete", trace.SpanKindClient) &&
					has(spans, "switchboard.mailbox.v1.MailboxService/Complete", trace.SpanKindServer)
			})
			httpSpan := find(t, spans, "POST /v1/act", trace.SpanKindServer)
			if httpSpan.Parent.SpanID().String() != "00f067aa0ba902b7" {
				t.Errorf("the gateway's span has parent %s, want the caller's", httpSpan.Parent.SpanID())
			}
			invoke := find(t, spans, "switchboard.mailbox.v1.MailboxService/Invoke", trace.SpanKindServer)
			run := find(t, spans, "run "+c.tool, trace.SpanKindConsumer)
			if run.Parent.SpanID() != invoke.SpanContext.SpanID() {
				t.Errorf("the run's parent is %s, want the Invoke that posted it (%s)", run.Parent.SpanID(), invoke.SpanContext.SpanID())
			}
			complete := find(t, spans, "switchboard.mailbox.v1.MailboxService/Complete", trace.SpanKindClient)
			if complete.Parent.SpanID() != run.SpanContext.SpanID() {
				t.Errorf("the Complete call's parent is %s, want the run", complete.Parent.SpanID())
			}
			// The host completes on its Serve stream: the mailbox's span for
			// it continues the trace the complete message carried.
			stored := find(t, spans, "switchboard.mailbox.v1.MailboxService/Complete", trace.SpanKindServer)
			if stored.Parent.SpanID() != complete.SpanContext.SpanID() {
				t.Errorf("the mailbox's Complete span has parent %s, want the host's (%s)", stored.Parent.SpanID(), complete.SpanContext.SpanID())
			}
			want := "00-" + c.traceID + "-"
			if !strings.HasPrefix(got, want) {
				t.Fatalf("the tool saw traceparent %q, want one of trace %s", got, c.traceID)
			}
			// The bridge's run is what calls the server: the server's
			// parent is the run.
			if got != "00-"+c.traceID+"-"+run.SpanContext.SpanID().String()+"-01" {
				t.Errorf("%s saw %q, want the run span's traceparent", c.client, got)
			}
		})
	}
}
