package plugin

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/switchboard-run/switchboard/kit/suite/follower"
)

// progress makes a notice that names the request in flight by its "id" a
// progress note of that call (docs/plugins.md): "text" is the message, and
// "progress" and "total", when given, its numbers; without "progress" the
// note counts one step on. A notice without an id is only a notice, as it
// always was; one naming another request (a late one, say), or with an id
// that is no request's, is only that too. A progress or total that is not
// a number is a fault, and the notice makes no note.
func (b *Backend) progress(msg message) {
	id, ok := msg.id()
	if !ok {
		return // no id, or not a request's: only a notice
	}
	b.mu.Lock()
	c := b.inflight
	b.mu.Unlock()
	if c == nil || c.id != id {
		return // not the request in flight: only a notice
	}
	note := follower.Note{Step: true, Message: msg.text("text")}
	if msg.has("progress") {
		p, ok := number(msg.fields["progress"])
		if !ok {
			b.opts.OnFault(fmt.Sprintf("the notice for request %d has a progress of %s, which is not a number; it made no progress note", id, msg.text("progress")))
			return
		}
		note.Progress, note.Step = p, false
	}
	if msg.has("total") {
		t, ok := number(msg.fields["total"])
		if !ok || t <= 0 {
			b.opts.OnFault(fmt.Sprintf("the notice for request %d has a total of %s, which is not a positive number; it made no progress note", id, msg.text("total")))
			return
		}
		note.Total = t
	}
	c.progress(note)
}

// number reads a JSON number.
func number(raw json.RawMessage) (float64, bool) {
	var f float64
	if json.Unmarshal(raw, &f) != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}
