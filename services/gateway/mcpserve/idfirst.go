package mcpserve

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// HandleHeader is the response header in which a stateless-era tools/call
// names its invocation before it is answered (handleFirstAfter): a client
// whose connection breaks can collect the capture by it, or retry with its
// Idempotency-Key. docs/mcp.md, "tools/call".
const HandleHeader = "Switchboard-Invocation"

// handleFirstAfter is how long a call may run unanswered before the
// endpoint names its invocation: a quicker answer goes out alone, headers
// and all, in one write (fastcall.go's writeEvent).
const handleFirstAfter = 100 * time.Millisecond

// handleFirstKey carries, on a tools/call's context, what names its
// invocation to the client (a *firstWriter).
type handleFirstKey struct{}

// firstWriter answers one tools/call on rw: the invocation's name first,
// if the call runs long enough, then the answer. Either order is safe: the
// name is never written after the answer began.
type firstWriter struct {
	rw       http.ResponseWriter
	mu       sync.Mutex
	answered bool
	named    bool // the headers went out with the name: the status is 200
}

// name sends the headers of an SSE answer naming invocation id, and a
// comment line that says the same to a reader of the raw stream, unless
// the answer has begun.
func (f *firstWriter) name(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.answered || f.named {
		return
	}
	f.named = true
	h := f.rw.Header()
	streamHeaders(h)
	h.Set(HandleHeader, id)
	f.rw.WriteHeader(http.StatusOK)
	_, _ = f.rw.Write([]byte(": invocation " + id + "\n\n"))
	_ = http.NewResponseController(f.rw).Flush()
}

// answer writes the call's answer: msg as the one event of the reply, or,
// when the answer is an HTTP error (status not 200) and the name has not
// gone out, as that error.
func (f *firstWriter) answer(msg []byte, status int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answered = true
	switch {
	case f.named:
		_, _ = f.rw.Write(eventFrame(msg))
	case status != http.StatusOK:
		writeJSONStatus(f.rw, status, msg)
	default:
		writeEvent(f.rw, msg)
	}
}

// nameFirst names call's invocation through the request's firstWriter, if
// any, once the call has run handleFirstAfter unanswered. The returned
// stop ends that wait.
func nameFirst(ctx context.Context, call *running) (stop func() bool) {
	f, ok := ctx.Value(handleFirstKey{}).(*firstWriter)
	if !ok {
		return func() bool { return false }
	}
	t := time.AfterFunc(handleFirstAfter, func() {
		if id := call.handle(); id != "" {
			f.name(id)
		}
	})
	return t.Stop
}
