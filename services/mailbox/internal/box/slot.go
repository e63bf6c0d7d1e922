package box

import (
	"time"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
)

// Capture is a result as the mailbox keeps it.
type Capture = inflight.Capture

type state uint8

const (
	queued   state = iota // on its client's pending list
	handed                // on its client's handed list: leased, no capture yet
	answered              // has a capture; waits to be collected
)

// slot is one invocation this replica holds. It sits on at most one of its
// queue's lists (by state) and on the box's expiry list, both intrusive, so
// removal is O(1). A slot with a record (rev > 0) is durable: every change
// of its fate is written there first.
type slot struct {
	id     string
	client string // the addressee: only it may complete
	poster string // the driver: only it may collect or cancel
	tool   string
	front  string // where it was posted, for the audit trail
	input  string // empty in a durable slot not yet fetched (stub)
	size   int    // what input, tool, cwd and mcpParams hold, for a read's room
	cwd    *string
	// mcpParams is the MCP client's params beyond name and arguments.
	mcpParams *string
	trace     map[string]string
	posted    time.Time
	expires   int64         // unix nanoseconds
	timeout   time.Duration // the driver's, and when it runs out; zero: none
	deadline  time.Time
	handoffs  int32
	state     state
	capture   *Capture
	// notes are the latest progress reports; cancelled marks a capture its
	// poster's cancel wrote, kept for Status.
	notes     []inflight.Note
	cancelled bool
	// rev is its record's revision (0: it lives here only), and recorded the
	// hand-offs the record holds.
	rev      uint64
	recorded int32
	// writing is set while a write of its record is under way; acts that
	// meet it wait for it to close.
	writing chan struct{}
	// collectors counts the collections waiting here for its answer; keyed
	// those with a retry key, whose answer must outlive this replica.
	collectors, keyed int
	// awaited marks a Call posted at another replica: its collection is on
	// its way here, so its answer waits for it even before it arrives.
	awaited bool

	q, e link // queue list, expiry list
}

// invocation is s as a read hands it out, counted as the next hand-off.
func (s *slot) invocation() inflight.Invocation {
	return inflight.Invocation{ID: s.id, Tool: s.tool, Input: s.input, Cwd: s.cwd, MCPParams: s.mcpParams, Delivery: s.handoffs + 1, Trace: s.trace,
		Timeout: s.timeout, Deadline: s.deadline, Expires: time.Unix(0, s.expires)}
}

// stored is s as its record keeps it.
func (s *slot) stored() *mailboxv1.StoredInvocation {
	r := &mailboxv1.StoredInvocation{Poster: s.poster, Tool: s.tool, Input: s.input, Cwd: s.cwd, McpParams: s.mcpParams, TraceContext: s.trace,
		Timeout: int64(s.timeout), PostedUnixMs: s.posted.UnixMilli(), Handoffs: s.handoffs, Cancelled: s.cancelled,
		Notes: inflight.NotesProto(s.notes), Front: s.front}
	if !s.deadline.IsZero() {
		r.Deadline = s.deadline.UnixNano()
	}
	if s.capture != nil {
		r.Capture = captureProto(s.capture)
		r.Input, r.McpParams = "", nil
	}
	return r
}

// slotOf is the slot of a fetched record.
func slotOf(r *rec, ttl time.Duration) *slot {
	b := r.body
	s := &slot{id: r.id, client: r.client, poster: b.GetPoster(), tool: b.GetTool(), input: b.GetInput(), size: r.size, cwd: b.Cwd,
		mcpParams: b.McpParams,
		trace:     b.GetTraceContext(), posted: time.UnixMilli(b.GetPostedUnixMs()), timeout: time.Duration(b.GetTimeout()),
		handoffs: b.GetHandoffs(), recorded: b.GetHandoffs(), cancelled: b.GetCancelled(), notes: inflight.NotesOf(b.GetNotes()), rev: r.rev,
		front: b.GetFront()}
	s.expires = s.posted.Add(ttl).UnixNano()
	if d := b.GetDeadline(); d != 0 {
		s.deadline = time.Unix(0, d)
	}
	if c := b.GetCapture(); c != nil {
		s.state, s.capture = answered, captureOf(b)
	}
	return s
}

// link is a slot's place on one list: on names the list, so a slot's one
// queue link says which of its queue's lists holds it.
type link struct {
	prev, next *slot
	on         *list
}

// list is an intrusive doubly linked list over one of a slot's links.
type list struct {
	head, tail *slot
	n          int
	at         func(*slot) *link
}

func queueLinks(s *slot) *link  { return &s.q }
func expiryLinks(s *slot) *link { return &s.e }

func (l *list) pushBack(s *slot) {
	ln := l.at(s)
	ln.prev, ln.next, ln.on = l.tail, nil, l
	if l.tail != nil {
		l.at(l.tail).next = s
	} else {
		l.head = s
	}
	l.tail = s
	l.n++
}

func (l *list) remove(s *slot) {
	ln := l.at(s)
	if ln.prev != nil {
		l.at(ln.prev).next = ln.next
	} else {
		l.head = ln.next
	}
	if ln.next != nil {
		l.at(ln.next).prev = ln.prev
	} else {
		l.tail = ln.prev
	}
	ln.prev, ln.next, ln.on = nil, nil, nil
	l.n--
}

// has reports whether s is on l.
func (l *list) has(s *slot) bool { return l.at(s).on == l }

// prepend moves every slot of front before l's, keeping front's order.
func (l *list) prepend(front *list) {
	if front.n == 0 {
		return
	}
	if l.head != nil {
		l.at(front.tail).next = l.head
		l.at(l.head).prev = front.tail
	} else {
		l.tail = front.tail
	}
	for s := front.head; s != nil; s = l.at(s).next {
		l.at(s).on = l
	}
	l.head = front.head
	l.n += front.n
	front.head, front.tail, front.n = nil, nil, 0
}
