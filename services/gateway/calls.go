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

// isRESTCall counts a REST invoke as one call.
func isRESTCall(r *http.Request) (int, *http.Request) {
	if r.Method == http.MethodPost && restCalls[r.URL.Path] {
		return 1, r
	}
	return 0, r
}

// isActCall counts an act invoking a tool as one call.
func isActCall(r *http.Request) (int, *http.Request) {
	var head struct {
		Op string `json:"op"`
	}
	r, body, ok := peek(r)
	if ok && json.Unmarshal(body, &head) == nil && head.Op == "invoke" {
		return 1, r
	}
	return 0, r
}

// isMCPCall counts the tools/call requests of an MCP POST: one message, or
// each of a JSON-RPC batch (which older protocol revisions allow), so a
// batch is not a way around the limits.
func isMCPCall(r *http.Request) (int, *http.Request) {
	type head struct {
		Method string `json:"method"`
	}
	r, body, ok := peek(r)
	if !ok {
		return 0, r
	}
	body = bytes.TrimLeft(body, " \t\r\n")
	var msgs []head
	if len(body) > 0 && body[0] == '[' {
		if json.Unmarshal(body, &msgs) != nil {
			return 0, r
		}
	} else {
		var one head
		if json.Unmarshal(body, &one) != nil {
			return 0, r
		}
		msgs = []head{one}
	}
	n := 0
	for _, m := range msgs {
		if m.Method == "tools/call" {
			n++
		}
	}
	return n, r
}

// peek reads a POST body and puts it back for the route, whose own
// decoder is the strict one and answers any fault. The body is bounded
// already (package bodylimit).
func peek(r *http.Request) (*http.Request, []byte, bool) {
	if r.Method != http.MethodPost || r.Body == nil {
		return r, nil, false
	}
	body, err := io.ReadAll(r.Body)
	_ = r.Body.Close()
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{err}))
	return r, body, err == nil
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
