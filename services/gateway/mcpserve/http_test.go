package mcpserve

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// An MCP response is an event stream that outlives the gateway's read and
// write timeouts; a real server on loopback, with both cut short, shows
// that the stream survives them once unbound ran, a request body included.
func TestAnMCPStreamOutlivesTheServersTimeouts(t *testing.T) {
	t.Parallel()
	const limit = 150 * time.Millisecond
	srv := &http.Server{ReadTimeout: limit, WriteTimeout: limit, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		unbound(w)
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusOK)
		http.NewResponseController(w).Flush()
		select {
		case <-r.Context().Done():
			return // the server cancelled the request: the client sees a cut stream
		case <-time.After(4 * limit):
		}
		_, _ = io.WriteString(w, "still here after "+string(body))
	})}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(lis)
	t.Cleanup(func() { srv.Close() })

	for _, tt := range []struct{ name, method, body string }{
		{"a GET notification stream", http.MethodGet, ""},
		{"a POST whose reply streams", http.MethodPost, "a body"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req, err := http.NewRequest(tt.method, "http://"+lis.Addr().String()+"/mcp", strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			res, err := testkit.HTTP.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			got, err := io.ReadAll(res.Body)
			if err != nil || string(got) != "still here after "+tt.body {
				t.Fatalf("the stream read %q, %v", got, err)
			}
		})
	}
}

// Over HTTP a call's identity comes from the header ServeHTTP wrote for
// its own request; without one the call is refused, never defaulted.
func TestACallOverHTTPActsAsTheIdentityOfItsRequest(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		header http.Header
		want   string
	}{
		{"a driver", http.Header{"Switchboard-Mcp-Caller": {"driver alice smith"}}, ""},
		{"a driver with workspaces", http.Header{"Switchboard-Mcp-Caller": {"driver alice"}, "Switchboard-Mcp-Workspaces": {"dev,ops"}}, ""},
		{"no header", http.Header{}, "this call carries no caller identity"},
		{"two headers", http.Header{"Switchboard-Mcp-Caller": {"driver a", "driver b"}}, "this call carries no caller identity"},
		{"two workspace headers", http.Header{"Switchboard-Mcp-Caller": {"driver a"}, "Switchboard-Mcp-Workspaces": {"a", "b"}}, "this call carries no caller identity"},
		{"bad workspaces", http.Header{"Switchboard-Mcp-Caller": {"driver a"}, "Switchboard-Mcp-Workspaces": {"A"}}, `workspace name "A"`},
		{"a grade nobody has", http.Header{"Switchboard-Mcp-Caller": {"root alice"}}, `unknown grade "root"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := &mcp.CallToolRequest{Extra: &mcp.RequestExtra{Header: tt.header}}
			ctx, err := callerFromHeader(context.Background(), req)
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("err = %v, want %q", err, tt.want)
				}
				return
			}
			if err != nil || ctx == nil {
				t.Fatalf("err = %v", err)
			}
		})
	}
}
