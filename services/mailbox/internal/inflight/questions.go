package inflight

import (
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/lib/rawjson"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
	"github.com/switchboard-run/switchboard/kit/suite/contract"
)

// Question is a request the host's MCP server made of its client while
// running an invocation, kept as a note for the poster to answer.
type Question struct {
	ID, Method string
	Params     string // a JSON object
	// HandOff is the hand-off whose run asked it (0: before hand-offs
	// were kept on questions, taken as the latest).
	HandOff int32 `json:",omitempty"`
}

// CheckQuestion checks a report's question: no progress of its own, a
// known method, an id and params within their bounds.
func CheckQuestion(req *mailboxv1.ReportRequest) (*Question, error) {
	q := req.GetQuestion()
	switch {
	case req.GetProgress() != 0 || req.Total != nil || req.GetMessage() != "" || req.Log != nil:
		return nil, status.Error(codes.InvalidArgument, "report: a question carries no progress, total, message or log message of its own")
	case !contract.QuestionID.MatchString(q.GetId()):
		return nil, status.Errorf(codes.InvalidArgument, "report: question id %q is not 1–64 characters of [A-Za-z0-9._-]", capture.Cap(q.GetId(), 80))
	case !slices.Contains(contract.QuestionMethods, q.GetMethod()):
		return nil, status.Errorf(codes.InvalidArgument, "report: question method %q is not one a poster can be asked (%s)", capture.Cap(q.GetMethod(), 80), strings.Join(contract.QuestionMethods, ", "))
	case len(q.GetParams()) > contract.MaxQuestionParams:
		return nil, status.Errorf(codes.InvalidArgument, "report: question params are %d bytes, over the %d a question may hold", len(q.GetParams()), contract.MaxQuestionParams)
	}
	if err := rawjson.CheckObject("question params", q.GetParams()); err != nil {
		return nil, status.Error(codes.InvalidArgument, "report: "+err.Error())
	}
	return &Question{ID: q.GetId(), Method: q.GetMethod(), Params: q.GetParams()}, nil
}

// CheckAnswer checks an answer: a question id, and exactly one of a result
// (a JSON object) and an error, each within its bound.
func CheckAnswer(req *mailboxv1.AnswerRequest) (*mailboxv1.Answered, error) {
	switch {
	case !contract.QuestionID.MatchString(req.GetQuestion()):
		return nil, status.Errorf(codes.InvalidArgument, "answer: question id %q is not 1–64 characters of [A-Za-z0-9._-]", capture.Cap(req.GetQuestion(), 80))
	case (req.GetResult() == "") == (req.Error == nil):
		return nil, status.Error(codes.InvalidArgument, "answer: send exactly one of result and error")
	case len(req.GetResult()) > contract.MaxAnswerResult:
		return nil, status.Errorf(codes.InvalidArgument, "answer: result is %d bytes, over the %d an answer may hold", len(req.GetResult()), contract.MaxAnswerResult)
	case req.Error != nil && len(req.GetError().GetMessage()) > contract.MaxAnswerMessage:
		return nil, status.Errorf(codes.InvalidArgument, "answer: error message is %d bytes, over the %d kept", len(req.GetError().GetMessage()), contract.MaxAnswerMessage)
	}
	if req.GetResult() != "" {
		if err := rawjson.CheckObject("result", req.GetResult()); err != nil {
			return nil, status.Error(codes.InvalidArgument, "answer: "+err.Error())
		}
	}
	return &mailboxv1.Answered{Invocation: req.GetInvocation(), Question: req.GetQuestion(), Result: req.GetResult(), Error: req.GetError()}, nil
}

// Asked finds question id among notes, and reports whether its answer
// reached the host.
func Asked(notes []Note, id string) (q *Question, answered bool) {
	for i := range notes {
		if n := notes[i].Question; n != nil && n.ID == id {
			q = n
		}
		answered = answered || notes[i].Answered == id
	}
	return q, answered
}

// AskedBy counts the questions among notes that hand-off's run asked.
func AskedBy(notes []Note, handOff int32) int {
	asked := 0
	for i := range notes {
		if q := notes[i].Question; q != nil && q.HandOff == handOff {
			asked++
		}
	}
	return asked
}

// Waiting counts the questions among notes that hand-off's run asked and
// whose answers have not reached the host.
func Waiting(notes []Note, handOff int32) int {
	waiting := 0
	for i := range notes {
		if q := notes[i].Question; q != nil && !q.Void(handOff) {
			if _, answered := Asked(notes[i:], q.ID); !answered {
				waiting++
			}
		}
	}
	return waiting
}

// TooManyWaiting refuses a question past contract.MaxWaitingPerClient.
func TooManyWaiting(id, client string) error {
	return status.Errorf(codes.ResourceExhausted, "report: invocation %q cannot ask: %q has %d questions waiting for answers already, the most one client may have", id, client, contract.MaxWaitingPerClient)
}

// Void says whether q was asked by a run before hand-off, the latest.
func (q *Question) Void(handOff int32) bool { return q.HandOff != 0 && q.HandOff < handOff }

// TooManyQuestions refuses a question past contract.MaxQuestions.
func TooManyQuestions(id string) error {
	return status.Errorf(codes.ResourceExhausted, "report: invocation %q has asked %d questions already, the most one call may ask", id, contract.MaxQuestions)
}

// NotAsked refuses an answer to a question the invocation's notes do not
// hold: never asked, or dropped as newer notes came.
func NotAsked(id, question string) error {
	return status.Errorf(codes.FailedPrecondition, "answer: invocation %q has no question %q waiting; read its notes with Status", id, question)
}

// AnsweredAlready refuses a second answer to a question: the host heard
// the first.
func AnsweredAlready(id, question string) error {
	return status.Errorf(codes.FailedPrecondition, "answer: question %q of invocation %q is answered already; a question is answered once", question, id)
}

// Superseded refuses an answer to a question of an earlier run than the
// latest hand-off's.
func Superseded(id string, q *Question, handOff int32) error {
	return status.Errorf(codes.FailedPrecondition, "answer: question %q of invocation %q was asked by hand-off %d, whose run ended; hand-off %d asks anew (read its notes with Status)", q.ID, id, q.HandOff, handOff)
}

// NotReading refuses an answer whose host holds no read of the invocation
// now: it would never reach the run that asked.
func NotReading(id string) error {
	return status.Errorf(codes.FailedPrecondition, "answer: invocation %q is not running on a host that is reading now (answered, cancelled, or its host's read ended); its question is void", id)
}

// QuestionProto is q for the wire; nil for nil.
func QuestionProto(q *Question) *mailboxv1.Question {
	if q == nil {
		return nil
	}
	return &mailboxv1.Question{Id: q.ID, Method: q.Method, Params: q.Params, HandOff: q.HandOff}
}

// QuestionOf is a stored question; nil for nil.
func QuestionOf(q *mailboxv1.Question) *Question {
	if q == nil {
		return nil
	}
	return &Question{ID: q.GetId(), Method: q.GetMethod(), Params: q.GetParams(), HandOff: q.GetHandOff()}
}
