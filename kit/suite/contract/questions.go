package contract

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/switchboard-run/switchboard/kit/suite/capture"
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
	// MaxWaitingPerClient bounds the questions a client's runs may have
	// waiting for their answers at once.
	MaxWaitingPerClient = 64
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

// CannotBeAsked is the refusal a host gives its tool's question when the
// call's driver cannot be asked (with -32601, MCP's method not found).
const CannotBeAsked = "the call's agent cannot be asked: it declared no such capability, or it reads results only (act, REST, gRPC); the call must finish without asking"

// CheckAsk checks a question a host's program asked (a plugin's ask line,
// a local tool's ::ask::) before it is posted: a key of 1–64 bytes, a
// method a driver can be asked, params a JSON object within the bound.
func CheckAsk(key, method string, params []byte) error {
	switch {
	case key == "" || len(key) > 64:
		return fmt.Errorf("ask: key %q is not 1–64 bytes", capture.Cap(key, 80))
	case !slices.Contains(QuestionMethods, method):
		return fmt.Errorf("ask: method %q is not one a driver can be asked (%s)", capture.Cap(method, 80), strings.Join(QuestionMethods, ", "))
	case len(params) > MaxQuestionParams:
		return fmt.Errorf("ask: params are %d bytes, over the %d a question may hold", len(params), MaxQuestionParams)
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(params, &obj) != nil || obj == nil {
		return fmt.Errorf("ask: params are not a JSON object")
	}
	return nil
}

// AskError is a question's refusal as a host's program reads it (a
// plugin's answer line, a local tool's answers descriptor).
type AskError struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
}

// AskErrorOf is err, met asking a driver method, as a program reads it:
// the driver's own JSON-RPC error, or a sentence saying no answer came;
// nil for nil.
func AskErrorOf(method string, err error) *AskError {
	if err == nil {
		return nil
	}
	if rpcErr, ok := errors.AsType[*jsonrpc.Error](err); ok {
		return &AskError{Code: rpcErr.Code, Message: rpcErr.Message}
	}
	return &AskError{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("%s: the call's agent was asked, but no answer came: %v", method, err)}
}
