package gateway

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
)

// The call routes the per-caller limits count: an act with op "invoke",
// an MCP tools/call, and the REST invoke routes (Invoke and Call).
var restCalls = map[string]bool{"/v1/invocations": true, "/v1/call": true}

// isRESTCall reports whether r is a REST invoke.
func isRESTCall(r *http.Request) (bool, *http.Request) {
	return r.Method == http.MethodPost && restCalls[r.URL.Path], r
}

// isActCall reports whether r is an act invoking a tool.
func isActCall(r *http.Request) (bool, *http.Request) {
	var head struct {
		Op string `json:"op"`
	}
	r, ok := peekJSON(r, &head)
	return ok && head.Op == "invoke", r
}

// isMCPCall reports whether r is an MCP tools/call.
func isMCPCall(r *http.Request) (bool, *http.Request) {
	var head struct {
		Method string `json:"method"`
	}
	r, ok := peekJSON(r, &head)
	return ok && head.Method == "tools/call", r
}

// peekJSON decodes a POST body into v loosely (the route's own decoder is
// the strict one, and answers any fault) and puts the body back. The body
// is bounded already (package bodylimit).
func peekJSON(r *http.Request, v any) (*http.Request, bool) {
	if r.Method != http.MethodPost || r.Body == nil {
		return r, false
	}
	body, err := io.ReadAll(r.Body)
	_ = r.Body.Close()
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{err}))
	if err != nil {
		return r, false
	}
	return r, json.Unmarshal(body, v) == nil
}

// errReader hands the route's decoder the read error (such as the body
// limit's) after the bytes read.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	return 0, io.EOF
}
