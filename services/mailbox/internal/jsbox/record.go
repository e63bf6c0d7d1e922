package jsbox

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"

	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
)

// record is a slot as the bucket keeps it, under the invocation id: who
// posted it, who it is for, and — once answered — its capture. JSON, so an
// operator can read a slot with `nats kv get`. The input is not here: it
// travels once, in the queue message.
type record struct {
	Client string `json:"client"`
	Poster string `json:"poster"`
	Tool   string `json:"tool"`
	// Handoffs is written from the second hand-off on (a first hand-off
	// changes nothing a capture would say).
	Handoffs int32             `json:"handoffs,omitempty"`
	Capture  *inflight.Capture `json:"capture,omitempty"`
}

func (r *record) encode() []byte {
	b, _ := json.Marshal(r) // plain strings and numbers: cannot fail
	return b
}

func decodeRecord(id string, b []byte) (record, error) {
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return record{}, fmt.Errorf("the slot of %s in the bucket is not a record this mailbox reads: %w", id, err)
	}
	return r, nil
}

// answer is what a completion tells the callers waiting for it: the slot's
// revision once answered, so a waiter can take it (compare-and-purge)
// without reading it again, and the capture.
type answer struct {
	Revision uint64           `json:"rev"`
	Capture  inflight.Capture `json:"capture"`
}

// Queue message headers. The body is the input, byte for byte.
const (
	headerID   = "Sb-Invocation"
	headerTool = "Sb-Tool"
	headerCwd  = "Sb-Cwd" // strconv.Quote'd: a path may hold any byte
)

func queueMessage(subject string, p inflight.Post) *nats.Msg {
	m := nats.NewMsg(subject)
	m.Header.Set(nats.MsgIdHdr, p.ID) // a retried publish is stored once
	m.Header.Set(headerID, p.ID)
	m.Header.Set(headerTool, p.Tool)
	if p.Cwd != nil {
		m.Header.Set(headerCwd, strconv.Quote(*p.Cwd))
	}
	m.Data = []byte(p.Input)
	return m
}

// invocation reads a queue message back; delivery is its hand-off count.
func invocation(h nats.Header, data []byte, delivery int32) (inflight.Invocation, error) {
	inv := inflight.Invocation{ID: h.Get(headerID), Tool: h.Get(headerTool), Input: string(data), Delivery: delivery}
	if inv.ID == "" {
		return inv, fmt.Errorf("a queue message has no %s header", headerID)
	}
	if q := h.Get(headerCwd); q != "" {
		cwd, err := strconv.Unquote(q)
		if err != nil {
			return inv, fmt.Errorf("the %s header of %s is not a quoted string: %w", headerCwd, inv.ID, err)
		}
		inv.Cwd = &cwd
	}
	return inv, nil
}
