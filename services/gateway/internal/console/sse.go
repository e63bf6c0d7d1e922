package console

import (
	"bytes"
	"net/http"
	"time"
)

// events is an open Server-Sent Events answer. Each event names the
// element of the page its HTML replaces; the page's script swaps it in.
type events struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

// startEvents begins an event stream. It lifts the server's write
// deadline: the stream lasts as long as the page is open (the caller's
// going away ends it, through the request's context).
func startEvents(w http.ResponseWriter) *events {
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	_ = rc.Flush()
	return &events{w: w, rc: rc}
}

// send writes one event: its name, then the HTML a line at a time (an
// event's data may not hold a bare newline).
func (e *events) send(name string, html []byte) error {
	var buf bytes.Buffer
	buf.WriteString("event: " + name + "\n")
	for _, line := range bytes.Split(bytes.TrimRight(html, "\n"), []byte("\n")) {
		buf.WriteString("data: ")
		buf.Write(bytes.TrimRight(line, "\r"))
		buf.WriteByte('\n')
	}
	buf.WriteByte('\n')
	if _, err := e.w.Write(buf.Bytes()); err != nil {
		return err
	}
	return e.rc.Flush()
}

// render sends the named template as the event name.
func (e *events) render(name, tmpl string, data any) error {
	b, err := fragment(tmpl, data)
	if err != nil {
		return err
	}
	return e.send(name, b)
}

// refusal sends a refusal in place of the element name.
func (e *events) refusal(name, sentence string) {
	_ = e.render(name, "refusal", sentence)
}
