package inflight

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/lib/rawjson"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
	"github.com/switchboard-run/switchboard/kit/suite/contract"
)

// Progress notes (issue 20): a host says how far a run has got, the store
// keeps the latest on the invocation's slot, and the poster reads them with
// Status. A slot with no notes carries nothing for them, so a call nobody
// reports on costs what it did before.

// MaxNotes is how many notes a slot keeps; older ones are dropped.
const MaxNotes = 16

// MaxNoteMessage is how many characters of a note's message are kept;
// longer ones are cut with a marker (capture.Cap's).
const MaxNoteMessage = 1000

// Note is one progress report as a store keeps it.
type Note struct {
	// Seq numbers the notes of one invocation from 1, in the order stored.
	Seq      int64
	Progress float64
	// Total is nil when the host does not know it.
	Total   *float64
	Message string
	// Log is set on a note that is a message the host's MCP server logged
	// (its progress, total and message are then empty).
	Log *LogMessage `json:",omitempty"`
	// Question is set on a note that is a question the host asked its
	// poster (its progress, total and message are then empty).
	Question *Question `json:",omitempty"`
	// Answered names the question whose answer reached the host (the
	// note holds nothing else).
	Answered string `json:",omitempty"`
	// At is when the store kept it.
	At time.Time
}

// LogMessage is one message an MCP server logged during a run.
type LogMessage struct {
	Level, Logger string
	Data          string // JSON text
}

// NewNote is the note a report makes, its message cut to MaxNoteMessage
// characters. The store numbers it.
func NewNote(progress float64, total *float64, message string, at time.Time) Note {
	return Note{Progress: progress, Total: total, Message: capture.Cap(message, MaxNoteMessage), At: at}
}

// AddNote appends n to notes, numbered after the last one, dropping the
// oldest past MaxNotes (a question or its answer only when no other note
// is left to drop: they are bounded, and a dropped one cannot be answered),
// and returns the notes and n's seq.
func AddNote(notes []Note, n Note) ([]Note, int64) {
	n.Seq = 1
	if len(notes) > 0 {
		n.Seq = notes[len(notes)-1].Seq + 1
	}
	if len(notes) >= MaxNotes {
		drop := slices.IndexFunc(notes, func(n Note) bool { return n.Question == nil && n.Answered == "" })
		drop = max(drop, 0)
		notes = slices.Concat(notes[:drop:drop], notes[drop+1:])
	}
	return append(notes, n), n.Seq
}

// noteOverhead bounds what a note holds beyond its message: its numbers,
// its time, and their tags.
const noteOverhead = 48

// NotesBytes is what notes hold, for the mailbox's byte budgets.
func NotesBytes(notes []Note) int {
	n := 0
	for i := range notes {
		n += len(notes[i].Message) + noteOverhead
		if l := notes[i].Log; l != nil {
			n += len(l.Level) + len(l.Logger) + len(l.Data)
		}
		if q := notes[i].Question; q != nil {
			n += len(q.ID) + len(q.Method) + len(q.Params)
		}
		n += len(notes[i].Answered)
	}
	return n
}

// NotesAfter returns the notes numbered after seq, oldest first.
func NotesAfter(notes []Note, seq int64) []Note {
	for i, n := range notes {
		if n.Seq > seq {
			return notes[i:]
		}
	}
	return nil
}

// Phase is where an invocation is, as Status tells its poster.
type Phase int

const (
	// Queued waits for its host's read.
	Queued Phase = iota + 1
	// HandedOut was handed to its host and has no capture yet.
	HandedOut
	// AnsweredPhase has a capture waiting for its poster.
	AnsweredPhase
	// CancelledPhase was cancelled by its poster and kept (Cancel's keep).
	CancelledPhase
)

// State is an invocation as its poster sees it through Status.
type State struct {
	Phase    Phase
	Handoffs int32
	// Notes are those after the seq asked about, oldest first.
	Notes []Note
	// Capture is set once answered or cancelled: read, not taken.
	Capture *Capture
	// Expires is when the slot expires and the invocation is gone.
	Expires time.Time
	// Client and Tool are what it calls, and Posted when it was posted
	// (zero when the store does not know): an MCP task maps its capture as
	// a call of that tool would.
	Client, Tool string
	Posted       time.Time
}

// News reports whether st has something a Status wait waits for: a note,
// or the answer.
func (st *State) News() bool { return len(st.Notes) > 0 || st.Capture != nil }

// NotRunning refuses a report on an invocation that has its capture already
// (answered or cancelled): nobody waits for its progress any more.
func NotRunning(id string) error {
	return status.Errorf(codes.FailedPrecondition,
		"report: invocation %q is answered or cancelled already, so no progress on it is kept; stop running it", id)
}

// MaxStatusWait bounds how long Status waits for news.
const MaxStatusWait = 60 * time.Second

// String names a phase for sentences and tests.
func (p Phase) String() string {
	switch p {
	case Queued:
		return "queued"
	case HandedOut:
		return "handed out"
	case AnsweredPhase:
		return "answered"
	case CancelledPhase:
		return "cancelled"
	}
	return fmt.Sprintf("phase(%d)", int(p))
}

// CheckLog is the log message req carries, or a refusal naming what is
// wrong with it.
func CheckLog(req *mailboxv1.ReportRequest) (*LogMessage, error) {
	l := req.GetLog()
	switch {
	case req.GetProgress() != 0 || req.Total != nil || req.GetMessage() != "":
		return nil, status.Error(codes.InvalidArgument, "report: a log message carries no progress, total or message of its own")
	case !slices.Contains(contract.LogLevels, l.GetLevel()):
		return nil, status.Errorf(codes.InvalidArgument, "report: log level %q is not one of MCP's (%s)", l.GetLevel(), strings.Join(contract.LogLevels, ", "))
	case len(l.GetLogger()) > contract.MaxLogLogger:
		return nil, status.Errorf(codes.InvalidArgument, "report: log logger is %d bytes, over the %d a name may hold", len(l.GetLogger()), contract.MaxLogLogger)
	case len(l.GetData()) > contract.MaxLogData:
		return nil, status.Errorf(codes.InvalidArgument, "report: log data is %d bytes, over the %d a log message may hold", len(l.GetData()), contract.MaxLogData)
	}
	if err := rawjson.Check("log data", l.GetData()); err != nil {
		return nil, status.Error(codes.InvalidArgument, "report: "+err.Error())
	}
	return &LogMessage{Level: l.GetLevel(), Logger: l.GetLogger(), Data: l.GetData()}, nil
}

// LogProto is l for the wire; nil for nil.
func LogProto(l *LogMessage) *mailboxv1.LogMessage {
	if l == nil {
		return nil
	}
	return &mailboxv1.LogMessage{Level: l.Level, Logger: l.Logger, Data: l.Data}
}

// LogOf is a stored log message; nil for nil.
func LogOf(l *mailboxv1.LogMessage) *LogMessage {
	if l == nil {
		return nil
	}
	return &LogMessage{Level: l.GetLevel(), Logger: l.GetLogger(), Data: l.GetData()}
}

// NotesProto is ns for the wire (a Status, a stored record); nil for none.
func NotesProto(ns []Note) []*mailboxv1.ProgressNote {
	if len(ns) == 0 {
		return nil
	}
	out := make([]*mailboxv1.ProgressNote, len(ns))
	for i, n := range ns {
		out[i] = &mailboxv1.ProgressNote{Seq: n.Seq, Progress: n.Progress, Total: n.Total, Message: n.Message, At: timestamppb.New(n.At),
			Log: LogProto(n.Log), Question: QuestionProto(n.Question), Answered: answeredProto(n.Answered)}
	}
	return out
}

// answeredProto is an answer's mark for the wire: absent on other notes,
// so their JSON shape stays as it was.
func answeredProto(question string) *string {
	if question == "" {
		return nil
	}
	return &question
}

// NotesOf is the notes a stored record holds; nil for none.
func NotesOf(ps []*mailboxv1.ProgressNote) []Note {
	if len(ps) == 0 {
		return nil
	}
	out := make([]Note, len(ps))
	for i, p := range ps {
		out[i] = Note{Seq: p.GetSeq(), Progress: p.GetProgress(), Total: p.Total, Message: p.GetMessage(), At: p.GetAt().AsTime(),
			Log: LogOf(p.GetLog()), Question: QuestionOf(p.GetQuestion()), Answered: p.GetAnswered()}
	}
	return out
}
