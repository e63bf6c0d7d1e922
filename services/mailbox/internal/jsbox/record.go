package jsbox

import (
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/capture"

	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
)

// record is a slot as the bucket keeps it, under the invocation id
// (mailboxv1.StoredSlot on the wire): who posted it, who it is for, and —
// once answered — its capture. The input is not here: it travels once, in
// the queue message.
type record struct {
	Client string
	Poster string
	Tool   string
	// Handoffs counts the hand-offs to the client's host, written at each
	// (JetStream's delivery count is no measure: see handoff.go).
	Handoffs int32
	Capture  *inflight.Capture
	// TakenBy is the retry key of the collection that took the capture.
	TakenBy string
	// Posted is when the invocation was posted (zero if not kept).
	Posted time.Time
	// Timeout is the driver's timeout, and Deadline when it runs out; zero
	// when it set none.
	Timeout  time.Duration
	Deadline time.Time
	// Notes are the host's latest progress notes; nil until it reports.
	Notes []inflight.Note
	// Cancelled marks a capture its poster's cancel wrote (kept).
	Cancelled bool
}

func (r *record) encode() []byte {
	m := &mailboxv1.StoredSlot{Client: r.Client, Poster: r.Poster, Tool: r.Tool, Handoffs: r.Handoffs, TakenBy: r.TakenBy,
		Cancelled: r.Cancelled, Notes: encodeNotes(r.Notes)}
	if !r.Posted.IsZero() {
		m.PostedUnixMs = r.Posted.UnixMilli()
	}
	if !r.Deadline.IsZero() {
		m.Deadline, m.Timeout = r.Deadline.UnixNano(), int64(r.Timeout)
	}
	if r.Capture != nil {
		m.Capture = capture.New(r.Capture.Stdout, r.Capture.Stderr, r.Capture.ExitCode)
	}
	b, _ := proto.Marshal(m) // strings and numbers: cannot fail
	return b
}

func decodeRecord(id string, b []byte) (record, error) {
	var m mailboxv1.StoredSlot
	if err := proto.Unmarshal(b, &m); err != nil {
		return record{}, fmt.Errorf("the slot of %s in the bucket is not a record this mailbox reads: %w", id, err)
	}
	r := record{Client: m.GetClient(), Poster: m.GetPoster(), Tool: m.GetTool(), Handoffs: m.GetHandoffs(), TakenBy: m.GetTakenBy(),
		Cancelled: m.GetCancelled(), Notes: decodeNotes(m.GetNotes())}
	if ms := m.GetPostedUnixMs(); ms != 0 {
		r.Posted = time.UnixMilli(ms)
	}
	if m.GetDeadline() != 0 {
		r.Deadline, r.Timeout = time.Unix(0, m.GetDeadline()), time.Duration(m.GetTimeout())
	}
	if c := m.GetCapture(); c != nil {
		r.Capture = &inflight.Capture{Stdout: c.GetStdout(), Stderr: c.GetStderr(), ExitCode: c.GetExitCode()}
	}
	return r, nil
}

func encodeNotes(notes []inflight.Note) []*mailboxv1.ProgressNote {
	if len(notes) == 0 {
		return nil
	}
	out := make([]*mailboxv1.ProgressNote, len(notes))
	for i, n := range notes {
		out[i] = &mailboxv1.ProgressNote{Seq: n.Seq, Progress: n.Progress, Total: n.Total, Message: n.Message,
			At: timestamppb.New(n.At)}
	}
	return out
}

func decodeNotes(notes []*mailboxv1.ProgressNote) []inflight.Note {
	if len(notes) == 0 {
		return nil
	}
	out := make([]inflight.Note, len(notes))
	for i, n := range notes {
		out[i] = inflight.Note{Seq: n.GetSeq(), Progress: n.GetProgress(), Total: n.Total, Message: n.GetMessage(),
			At: n.GetAt().AsTime()}
	}
	return out
}

// encodeAnswer is what a completion tells the callers waiting for it: the
// slot's revision once answered, so a waiter can take it (compare-and-purge)
// without reading it again, the capture, and whose it is.
func encodeAnswer(rev uint64, poster string, c inflight.Capture) []byte {
	b, _ := proto.Marshal(&mailboxv1.StoredAnswer{Revision: rev, Poster: poster, Capture: capture.New(c.Stdout, c.Stderr, c.ExitCode)})
	return b
}

func decodeAnswer(b []byte) (answer, bool) {
	var m mailboxv1.StoredAnswer
	if len(b) == 0 || proto.Unmarshal(b, &m) != nil || m.GetCapture() == nil {
		return answer{}, false
	}
	c := m.GetCapture()
	return answer{Revision: m.GetRevision(), Poster: m.GetPoster(),
		Capture: inflight.Capture{Stdout: c.GetStdout(), Stderr: c.GetStderr(), ExitCode: c.GetExitCode()}}, true
}

// answer is a decoded StoredAnswer.
type answer struct {
	Revision uint64
	Poster   string // empty from a replica of an earlier version, which named none
	Capture  inflight.Capture
}

// Queue message headers. The body is the input, byte for byte.
const (
	headerID   = "Sb-Invocation"
	headerTool = "Sb-Tool"
	headerCwd  = "Sb-Cwd" // strconv.Quote'd: a path may hold any byte
	// headerPoster and headerSlot are the slot as Post created it, and its
	// revision: a hand-off of an invocation whose slot is still at that
	// revision (never handed, answered nor cancelled) writes its count
	// without reading the slot first.
	headerPoster = "Sb-Poster"
	headerSlot   = "Sb-Slot-Revision"
	headerPosted = "Sb-Posted" // Unix milliseconds, as the slot keeps it
	// headerDeadline and headerTimeout are the driver's timeout, as the
	// slot keeps them (Unix nanoseconds, nanoseconds), when it set one.
	headerDeadline = "Sb-Deadline"
	headerTimeout  = "Sb-Timeout"
	// headerPrecounted marks a Call's invocation whose slot was created
	// with its first hand-off already counted (see precount.go); it names
	// the replica that posted it.
	headerPrecounted = "Sb-Precounted"
)

func queueMessage(subject string, p inflight.Post, slotRev uint64, posted time.Time, precountedBy string) *nats.Msg {
	m := nats.NewMsg(subject)
	m.Header.Set(nats.MsgIdHdr, p.ID) // a retried publish is stored once
	m.Header.Set(headerID, p.ID)
	m.Header.Set(headerTool, p.Tool)
	m.Header.Set(headerPoster, p.Poster)
	if slotRev != 0 { // a precounted Call's is being written meanwhile
		m.Header.Set(headerSlot, strconv.FormatUint(slotRev, 10))
	}
	m.Header.Set(headerPosted, strconv.FormatInt(posted.UnixMilli(), 10))
	if precountedBy != "" {
		m.Header.Set(headerPrecounted, precountedBy)
	}
	if !p.Deadline.IsZero() {
		m.Header.Set(headerDeadline, strconv.FormatInt(p.Deadline.UnixNano(), 10))
		m.Header.Set(headerTimeout, strconv.FormatInt(int64(p.Timeout), 10))
	}
	if p.Cwd != nil {
		m.Header.Set(headerCwd, strconv.Quote(*p.Cwd))
	}
	for k, v := range p.Trace {
		m.Header.Set(traceHeaders[k], v)
	}
	m.Data = []byte(p.Input)
	return m
}

// postedSlot returns the slot as Post created it for the queue message h
// of client, and its revision; ok is false for a message without them.
func postedSlot(h nats.Header, client string) (rec record, rev uint64, ok bool) {
	rev, err := strconv.ParseUint(h.Get(headerSlot), 10, 64)
	if err != nil || rev == 0 || h.Get(headerPoster) == "" {
		return record{}, 0, false
	}
	rec = record{Client: client, Poster: h.Get(headerPoster), Tool: h.Get(headerTool)}
	if ms, err := strconv.ParseInt(h.Get(headerPosted), 10, 64); err == nil && ms != 0 {
		rec.Posted = time.UnixMilli(ms)
	}
	if ns, err := strconv.ParseInt(h.Get(headerDeadline), 10, 64); err == nil && ns != 0 {
		timeout, _ := strconv.ParseInt(h.Get(headerTimeout), 10, 64)
		rec.Deadline, rec.Timeout = time.Unix(0, ns), time.Duration(timeout)
	}
	return rec, rev, true
}

// invocation reads a queue message back; delivery is its hand-off count.
func invocation(h nats.Header, data []byte, delivery int32) (inflight.Invocation, error) {
	inv := inflight.Invocation{ID: h.Get(headerID), Tool: h.Get(headerTool), Input: string(data), Delivery: delivery}
	if inv.ID == "" {
		return inv, fmt.Errorf("a queue message has no %s header", headerID)
	}
	for field, header := range traceHeaders {
		if v := h.Get(header); v != "" {
			if inv.Trace == nil {
				inv.Trace = map[string]string{}
			}
			inv.Trace[field] = v
		}
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

// traceHeaders are the message headers an invocation's W3C trace context
// travels in, by field.
var traceHeaders = map[string]string{"traceparent": "Sb-Traceparent", "tracestate": "Sb-Tracestate"}
