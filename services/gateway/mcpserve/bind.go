package mcpserve

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/services/gateway/internal/httperr"
)

// sessionHeader names an MCP session (the era with sessions).
const sessionHeader = "Mcp-Session-Id"

// A session is bound to the identity that began it (docs/security.md): the
// Mcp-Session-Id a client sees is the SDK's id, a dot, and a digest of that
// id with the caller's grade and name. A request naming a session is
// served only when the digest is its own caller's, and reaches the SDK
// (and any replica that takes the session up) under the SDK's id; another
// caller who learned the id can neither use nor end the session. Nothing
// needs to be kept or shared between replicas.

// bindTag is the digest binding session id to id.
func bindTag(session string, id identity.Identity) string {
	sum := sha256.Sum256([]byte(session + "\x00" + string(id.Grade) + "\x00" + id.Name))
	return hex.EncodeToString(sum[:16])
}

// unbindSession makes r name the SDK's id of the session it names, when
// that session is caller's, and wraps rw so that a session id the SDK sets
// goes out bound to caller. A session of someone else is absent.
func unbindSession(rw http.ResponseWriter, r *http.Request, caller identity.Identity) (http.ResponseWriter, error) {
	if vs := r.Header.Values(sessionHeader); len(vs) > 0 {
		bound := vs[0]
		inner, tag, ok := strings.Cut(bound, ".")
		if len(vs) > 1 || !ok || inner == "" || subtle.ConstantTimeCompare([]byte(tag), []byte(bindTag(inner, caller))) != 1 {
			return nil, httperr.New(http.StatusNotFound,
				"no MCP session %q of %q: a session serves only the identity that began it; begin one of your own with initialize", bound, caller.Name)
		}
		r.Header.Set(sessionHeader, inner)
	}
	return &boundWriter{ResponseWriter: rw, caller: caller}, nil
}

// boundWriter binds the session id the SDK sets on a response (its
// initialize's) to the caller, before the header goes out.
type boundWriter struct {
	http.ResponseWriter
	caller identity.Identity
	sent   bool
}

func (w *boundWriter) bind() {
	if w.sent {
		return
	}
	w.sent = true
	if id := w.Header().Get(sessionHeader); id != "" && !strings.Contains(id, ".") {
		w.Header().Set(sessionHeader, id+"."+bindTag(id, w.caller))
	}
}

func (w *boundWriter) WriteHeader(code int) { w.bind(); w.ResponseWriter.WriteHeader(code) }

func (w *boundWriter) Write(b []byte) (int, error) { w.bind(); return w.ResponseWriter.Write(b) }

// Flush passes the event stream's flushes on (the SDK streams answers).
func (w *boundWriter) Flush() {
	w.bind()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the server's writer.
func (w *boundWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
