package upstream

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
)

// The Streamable HTTP transport's counterpart of stdio's Transport.OnLog:
// the events of a server's stream are read through a tap that hands each
// notifications/message to hear as the SDK reads it, before the event
// after it (a call's reply) reaches the SDK.

// maxTappedEvent bounds what the tap keeps of one event; a larger one is
// no log message worth passing on (the mailbox takes 4 KiB of data).
const maxTappedEvent = 64 << 10

// logTapping wraps base so that every event stream it answers is tapped.
type logTapping struct {
	base http.RoundTripper
	hear func(json.RawMessage)
}

func (t logTapping) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := t.base.RoundTrip(r)
	if err != nil {
		return res, err
	}
	if mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); mt == "text/event-stream" {
		res.Body = &logTap{body: res.Body, hear: t.hear}
	}
	return res, nil
}

// logTap reads an event stream through, finding its log messages.
type logTap struct {
	body io.ReadCloser
	hear func(json.RawMessage)
	line []byte // the line so far
	data []byte // the event's data lines so far, joined by "\n"
	over bool   // the event outgrew maxTappedEvent
}

func (t *logTap) Read(p []byte) (int, error) {
	n, err := t.body.Read(p)
	for _, c := range p[:n] {
		if c != '\n' {
			if len(t.line) < maxTappedEvent {
				t.line = append(t.line, c)
			} else {
				t.over = true
			}
			continue
		}
		t.endLine(bytes.TrimSuffix(t.line, []byte("\r")))
		t.line = t.line[:0]
	}
	return n, err
}

func (t *logTap) Close() error { return t.body.Close() }

// endLine takes one line of the stream: a data field adds to the event, a
// blank line ends it; other fields are not the tap's.
func (t *logTap) endLine(line []byte) {
	if len(line) == 0 {
		if !t.over && len(t.data) > 0 {
			t.event(t.data)
		}
		t.data, t.over = t.data[:0], false
		return
	}
	if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
		if len(t.data) > 0 {
			t.data = append(t.data, '\n')
		}
		t.data = append(t.data, bytes.TrimPrefix(v, []byte(" "))...)
		t.over = t.over || len(t.data) > maxTappedEvent
	}
}

// event hears data when it is a notifications/message.
func (t *logTap) event(data []byte) {
	if !bytes.Contains(data, []byte(`"notifications/message"`)) {
		return
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(data, &msg) == nil && msg.ID == nil && msg.Method == "notifications/message" {
		t.hear(msg.Params)
	}
}
