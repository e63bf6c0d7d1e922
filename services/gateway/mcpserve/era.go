package mcpserve

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"

	"github.com/switchboard-run/switchboard/kit/lib/rawjson"
)

// The SDK writes 2026-07-28's cache fields (ttlMs, cacheScope) into the
// listings of every revision. A session's client speaks an older one, so
// its listings are answered without them (docs/mcp.md, "Every MCP method").

// cacheFields are the members a listing loses for a session's client.
var cacheFields = []string{"ttlMs", "cacheScope"}

// listMethods are the requests whose results carry them.
var listMethods = map[string]bool{"tools/list": true, "prompts/list": true, "resources/list": true,
	"resources/templates/list": true, "resources/read": true}

// olderEra is rw for a session's listing request (body's method, in a session):
// the answer is held until the SDK is done, then written without the cache
// fields; any other request gets rw itself.
func olderEra(rw http.ResponseWriter, r *http.Request, body []byte) (http.ResponseWriter, func()) {
	if r.Header.Get(sessionHeader) == "" || !listMethods[methodOf(body)] {
		return rw, func() {}
	}
	w := &heldWriter{ResponseWriter: rw, code: http.StatusOK}
	return w, w.release
}

// methodOf is the method of body, one JSON-RPC request ("" for anything else).
func methodOf(body []byte) string {
	msg, _ := members(body, "jsonrpc", "id", "method", "params")
	var method string
	_ = json.Unmarshal(msg["method"], &method)
	return method
}

// heldWriter keeps an answer until release.
type heldWriter struct {
	http.ResponseWriter
	code int
	body bytes.Buffer
}

func (w *heldWriter) WriteHeader(code int)        { w.code = code }
func (w *heldWriter) Write(b []byte) (int, error) { return w.body.Write(b) }
func (w *heldWriter) Flush()                      {}

// Unwrap gives http.ResponseController the connection's writer (deadlines).
func (w *heldWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// release writes the answer held, each JSON-RPC message of it (one JSON
// body, or an event stream's data lines) without the cache fields.
func (w *heldWriter) release() {
	var out []byte
	for _, line := range bytes.SplitAfter(w.body.Bytes(), []byte("\n")) {
		body, end := bytes.CutSuffix(line, []byte("\n"))
		prefix, data, isEvent := bytes.Cut(body, []byte("data: "))
		if !isEvent || len(prefix) > 0 {
			prefix, data = nil, body
		} else {
			prefix = []byte("data: ")
		}
		out = append(append(out, prefix...), withoutCacheFields(data)...)
		if end {
			out = append(out, '\n')
		}
	}
	h := w.ResponseWriter.Header()
	if h.Get("Content-Length") != "" {
		h.Set("Content-Length", strconv.Itoa(len(out)))
	}
	w.ResponseWriter.WriteHeader(w.code)
	_, _ = w.ResponseWriter.Write(out)
}

// withoutCacheFields is msg, a JSON-RPC message, with its result's cache
// fields left out; anything else is msg as it is.
func withoutCacheFields(msg []byte) []byte {
	members, ok := rawjson.Members(nil, msg)
	if !ok {
		return msg
	}
	for i, m := range members {
		if m.Key != "result" {
			continue
		}
		fields, ok := rawjson.Members(nil, m.Value)
		if !ok {
			return msg
		}
		for j, f := range fields {
			if slices.Contains(cacheFields, f.Key) {
				fields[j].Value = nil
			}
		}
		members[i].Value = rawjson.Object(fields)
	}
	return rawjson.Object(members)
}
