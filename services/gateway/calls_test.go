package gateway

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The call routes count what the limits count, and leave the body whole
// for the route.
func TestCallsAreCounted(t *testing.T) {
	for _, c := range []struct {
		count func(*http.Request) (int, *http.Request)
		body  string
		want  int
	}{
		{isMCPCall, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}`, 1},
		{isMCPCall, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, 0},
		{isMCPCall, ` [{"method":"tools/call"},{"method":"tools/list"},{"method":"tools/call"}]`, 2},
		{isMCPCall, `not json`, 0},
		{isActCall, `{"op":"invoke","client":"c","tool":"t","input":{}}`, 1},
		{isActCall, `{"op":"capture","invocation":"inv-1"}`, 0},
	} {
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(c.body))
		n, r := c.count(r)
		rest, _ := io.ReadAll(r.Body)
		if n != c.want || string(rest) != c.body {
			t.Errorf("%s: counted %d (want %d), left %q", c.body, n, c.want, rest)
		}
	}
	if n, _ := isRESTCall(httptest.NewRequest(http.MethodPost, "/v1/call", nil)); n != 1 {
		t.Error("POST /v1/call is not counted")
	}
	if n, _ := isRESTCall(httptest.NewRequest(http.MethodGet, "/v1/invocations", nil)); n != 0 {
		t.Error("a host's GET /v1/invocations is counted")
	}
}
