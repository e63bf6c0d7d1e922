// Package inflight is the mailbox's vocabulary: what an
// invocation and a capture are, how handles are minted, and the sentences
// of docs/design.md §3, byte for byte. Hosts and drivers — and the models
// behind them — read those sentences, so they are contract, not prose.
package inflight

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
	"github.com/switchboard-run/switchboard/kit/suite/contract"
)

// HandoffCap is how many times an invocation is handed out without a
// capture before the mailbox answers it itself.
const HandoffCap = 3

// ExitCancelled is the exit code of a cancelled invocation's capture.
const ExitCancelled = 130

// Capture is a result as the mailbox keeps it.
type Capture struct {
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	ExitCode int32  `json:"exit_code"`
	// MCPResult is an MCP server's tools/call result as JSON text, passed on
	// as the host sent it ("" from hosts that are not MCP servers').
	MCPResult string `json:"mcp_result,omitempty"`
	// MCPError is the JSON-RPC error an MCP server answered instead, as
	// JSON text.
	MCPError string `json:"mcp_error,omitempty"`
	// Warning is the mailbox's own sentence for the driver (Rehanded).
	Warning string `json:"warning,omitempty"`
	// Notes are the invocation's notes when it was answered, for the Call
	// that collects it (never stored with the capture: a record keeps its
	// notes apart).
	Notes []Note `json:"notes,omitempty"`
}

// Size is what the capture counts against --max-capture-bytes.
func (c *Capture) Size() int {
	return len(c.Stdout) + len(c.Stderr) + len(c.MCPResult) + len(c.MCPError)
}

// CaptureOf is a capture as the wire carries it, read without checks (the
// mailbox's own records; a host's capture is checked by the service).
func CaptureOf(c *mailboxv1.Capture) Capture {
	return Capture{Stdout: c.GetStdout(), Stderr: c.GetStderr(), ExitCode: c.GetExitCode(), MCPResult: c.GetMcpResult(),
		MCPError: c.GetMcpError(), Warning: c.GetWarning()}
}

// Proto is the capture on the wire; the optional fields only when set.
func (c *Capture) Proto() *mailboxv1.Capture {
	p := capture.New(c.Stdout, c.Stderr, c.ExitCode)
	if c.MCPResult != "" {
		p.McpResult = &c.MCPResult
	}
	if c.MCPError != "" {
		p.McpError = &c.MCPError
	}
	if c.Warning != "" {
		p.Warning = &c.Warning
	}
	return p
}

// Post is one invocation to queue.
type Post struct {
	ID     string
	Client string // the addressee: only it may complete
	Poster string // the driver: only it may collect or cancel
	Tool   string
	Input  string
	Cwd    *string // nil when the driver set none
	// MCPParams is the MCP client's tools/call params beyond name and
	// arguments, a JSON object; nil when it sent none.
	MCPParams *string
	// Trace is the posting call's W3C trace context; nil when untraced.
	Trace map[string]string
	// Timeout is the driver's timeout, and Deadline when it runs out; zero
	// when it set none.
	Timeout  time.Duration
	Deadline time.Time
	// Front is where it was posted, for the audit trail: "act", "rest",
	// "mcp", "console" or "grpc".
	Front string
}

// PostSize is what an invocation's input, tool, cwd and MCP params hold:
// its room in a read, its weight in the budgets, its bytes in for the
// audit trail.
func PostSize(input, tool string, cwd, mcpParams *string) int {
	n := len(input) + len(tool)
	if cwd != nil {
		n += len(*cwd)
	}
	if mcpParams != nil {
		n += len(*mcpParams)
	}
	return n
}

// Invocation is one hand-off, as a reader receives it.
type Invocation struct {
	ID    string
	Tool  string
	Input string
	// Cwd is nil when the driver set none.
	Cwd *string
	// MCPParams is nil when the driver set none (Post.MCPParams).
	MCPParams *string
	// Delivery counts hand-offs including this one.
	Delivery int32
	// Trace is the posting call's W3C trace context; nil when untraced.
	Trace map[string]string
	// Timeout is the driver's timeout, and Deadline when it runs out; zero
	// when it set none.
	Timeout  time.Duration
	Deadline time.Time
	// Expires is when its slot expires (--ttl): past it nobody can collect
	// a capture, so the host stops the run then too.
	Expires time.Time
}

// Size is what inv takes in a read's response, at most: its fields and
// their tags and lengths (rowOverhead).
func (inv *Invocation) Size() int {
	n := len(inv.ID) + len(inv.Tool) + len(inv.Input) + rowOverhead
	if inv.Cwd != nil {
		n += len(*inv.Cwd)
	}
	if inv.MCPParams != nil {
		n += len(*inv.MCPParams)
	}
	for k, v := range inv.Trace {
		n += len(k) + len(v) + traceEntryOverhead
	}
	return n
}

// rowOverhead bounds what protobuf adds to a row's fields: their tags and
// lengths, the delivery, time_left and timeout, and the row's own tag and
// length in the response.
const rowOverhead = 80

// traceEntryOverhead bounds what one trace_context map entry adds beyond
// its key and value: the entry's tag and length, and theirs.
const traceEntryOverhead = 8

// Room bounds one read's batch, and is used up by the Takes that fill it:
// Rows invocations more, of Bytes more together (by Size). The batch's
// first is taken whatever its size, so a read always makes progress; the
// mailbox's bounds keep one invocation well under Bytes.
type Room struct {
	Rows  int
	Bytes int
	// Full is set when an invocation waited that did not fit.
	Full  bool
	taken int
}

// Fits reports whether an invocation of size n fits the room, and marks
// the room full when it does not.
func (r *Room) Fits(n int) bool {
	if r.taken > 0 && (r.Rows < 1 || n > r.Bytes) {
		r.Full = true
		return false
	}
	return true
}

// Add counts an invocation of size n into the room.
func (r *Room) Add(n int) {
	r.taken++
	r.Rows--
	r.Bytes -= n
}

// NewID mints a handle: `inv-` and 128 random bits, unguessable, so holding
// a handle is the only way to name an invocation.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return "inv-" + hex.EncodeToString(b[:])
}

// IsID reports whether id has a handle's shape: `inv-` and 32 lower-case
// hex digits. Only such a string is ever put in a NATS subject.
func IsID(id string) bool {
	if len(id) != 36 || id[:4] != "inv-" {
		return false
	}
	for _, c := range id[4:] {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Absent is the one answer for a handle that is unknown, expired, answered
// already, or addressed to (or posted by) someone else: absent, never
// "forbidden", so a handle reveals nothing about who holds it.
func Absent(id string) error {
	return status.Errorf(codes.NotFound,
		"no invocation %q is in flight; it was answered already, it expired, or this engine restarted since it was posted — the box may have run it; read the world before acting again", id)
}

// SecondReader refuses a read while the client already holds one.
func SecondReader(client string) error {
	return contract.Refusal(status.Newf(codes.FailedPrecondition,
		"invocations: %q is already holding this engine's follow-class read — one machine's queue has one reader", client), contract.ReasonSecondReader)
}

// InDoubt is the capture the mailbox writes itself when an invocation
// reaches the hand-off cap.
func InDoubt(client string, handoffs int32) Capture {
	return Capture{ExitCode: 1, Stderr: fmt.Sprintf(
		"this invocation was handed to %q %d times and never answered; each hand-off may have run it; read the world before acting again", client, handoffs)}
}

// Rehanded heads the stderr of a capture that arrives after two or more
// hand-offs; fewer leave it as it is.
func Rehanded(c Capture, client string, handoffs int32) Capture {
	if handoffs < 2 {
		return c
	}
	prefix := fmt.Sprintf("this invocation was handed to %q %d times; each hand-off may have run it, so what this capture reports may be the effect of more than one run; read the world before acting again", client, handoffs)
	c.Warning = prefix
	if c.Stderr == "" {
		c.Stderr = prefix
	} else {
		c.Stderr = prefix + "\n" + c.Stderr
	}
	return c
}

// Cancelled is the capture of an invocation its poster cancelled.
func Cancelled(id, reason string) Capture {
	s := fmt.Sprintf("invocation %q was cancelled by its poster before it was answered", id)
	if reason != "" {
		s += ": " + reason
	}
	return Capture{Stderr: s, ExitCode: ExitCancelled}
}

// ExitTimeout is the exit code of an invocation whose timeout ran out, as
// timeout(1) exits.
const ExitTimeout = 124

// TimedOut is the capture of an invocation whose driver's timeout ran out
// before any host took it: it never ran.
func TimedOut(id, client string, deadline time.Time) Capture {
	return Capture{ExitCode: ExitTimeout, Stderr: fmt.Sprintf(
		"invocation %q ran out of its timeout at %s, before %q took it from its queue; it was not run",
		id, deadline.UTC().Format(time.RFC3339), client)}
}

// Past reports whether a deadline is set and has passed at now.
func Past(deadline, now time.Time) bool { return !deadline.IsZero() && !now.Before(deadline) }

// TooLarge refuses a capture over the bound.
func TooLarge(c *Capture, most int) error {
	what := "stdout and stderr hold"
	switch {
	case c.MCPResult != "":
		what = "stdout, stderr and mcp_result hold"
	case c.MCPError != "":
		what = "stdout, stderr and mcp_error hold"
	}
	return status.Errorf(codes.ResourceExhausted,
		"capture: %s %d bytes; this mailbox keeps at most %d — cut the output and complete again", what, c.Size(), most)
}

// QueueFull refuses a post to a client whose queue is at its bound.
func QueueFull(client string, n int) error {
	return status.Errorf(codes.ResourceExhausted,
		"client %q has %d invocations queued, the most this mailbox queues for one client; it is not reading its queue fast enough", client, n)
}

// BoxFull refuses a post when the mailbox holds all it may.
func BoxFull(n int) error {
	return status.Errorf(codes.ResourceExhausted,
		"the mailbox holds %d invocations, the most it may; collect captures or wait for some to be answered", n)
}

// ErrShuttingDown refuses acts on a box that is closing, before any of the
// act is done: a driver's front may ask another replica at once.
var ErrShuttingDown = contract.Refusal(status.New(codes.Unavailable,
	"the mailbox replica is shutting down; try again (another replica, or this one once it is back)"), contract.ReasonShuttingDown)

// Answer says who answered an invocation.
type Answer int

const (
	// ByHost is a capture its addressee completed.
	ByHost Answer = iota
	// ByCap is the mailbox's own in-doubt capture at the hand-off cap.
	ByCap
	// ByCancel is the cancelled capture of its poster's cancel.
	ByCancel
	// ByTimeout is the mailbox's own capture of an invocation whose
	// driver's timeout ran out before a host took it.
	ByTimeout
)

// Ended is an invocation as its answer leaves it: what the metrics and the
// audit trail are told. Posted is zero when the store cannot tell; Input
// is empty when it held only a stub of the invocation (the record has it).
type Ended struct {
	ID, Client, Poster, Tool, Front string
	Posted                          time.Time
	Handoffs                        int32
	InputBytes                      int
	Input                           string
	Cwd                             *string
	Capture                         Capture
	By                              Answer
}

// Answered is told of each answer a store writes. Stores call it under
// their locks: it must only count (or hand off).
type Answered func(Ended)
