package contract

import (
	"encoding/json"
	"regexp"
)

// QuestionMethods are the requests an MCP server makes of its client that a
// host may ask its invocation's poster (ReportRequest.question).
var QuestionMethods = []string{"elicitation/create", "sampling/createMessage", "roots/list"}

// QuestionID is what a question's id may be.
var QuestionID = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// Bounds of a question and its answer; the mailbox refuses what is larger.
const (
	MaxQuestionParams = 64 << 10
	MaxAnswerResult   = 256 << 10
	MaxAnswerMessage  = 1000
	// MaxQuestions bounds the questions one invocation may ask.
	MaxQuestions = 8
)

// AnswersKey is the mcp_params _meta member by which a driver's endpoint
// says it relays its host's questions (docs/mcp.md, "Questions").
const AnswersKey = "run.switchboard/answers"

// Answers reports whether an invocation's mcp_params say its driver
// answers its host's questions; params it cannot read say no.
func Answers(mcpParams string) bool {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	return json.Unmarshal([]byte(mcpParams), &p) == nil && string(p.Meta[AnswersKey]) == "true"
}
