package run

import (
	"context"
	"encoding/json"
	"os"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/switchboard-run/switchboard/kit/suite/contract"
)

// AskMarker starts a stderr line by which a tool asks its driver what an
// MCP server asks its client (docs/design.md §6):
// `::ask:: {"key":"k","method":"elicitation/create","params":{…}}`. The
// answer comes as one JSON line on the file descriptor AnswersFD names:
// {"key":"k","result":{…}} or {"key":"k","error":{"code":…,"message":"…"}}.
const AskMarker = "::ask::"

// MaxAskLine bounds what is read of one ask line: a question's params and
// room for its key and method.
const MaxAskLine = contract.MaxQuestionParams + 1024

// AnswersFD is the variable that names the tool's descriptor for answers;
// its value is always 3 (the first of exec.Cmd's ExtraFiles).
const AnswersFD = "SWITCHBOARD_ANSWERS_FD"

// answer is one line on the answers descriptor.
type answer struct {
	Key    string             `json:"key"`
	Result json.RawMessage    `json:"result,omitempty"`
	Error  *contract.AskError `json:"error,omitempty"`
}

// answerer answers a run's asks on the pipe its tool reads as fd 3.
type answerer struct {
	ctx context.Context // the run's: its end voids the questions waiting
	// ask asks the driver; nil: it cannot be asked.
	ask func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
	r   *os.File // the tool's end, closed once the tool has it

	mu sync.Mutex // one answer line at a time
	w  *os.File
	wg sync.WaitGroup
}

// newAnswerer makes the pipe a tool reads its answers from.
func newAnswerer(ctx context.Context, ask func(context.Context, string, json.RawMessage) (json.RawMessage, error)) (*answerer, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	return &answerer{ctx: ctx, ask: ask, r: r, w: w}, nil
}

// line takes one ask line (what follows the marker): a malformed ask, or
// one whose driver cannot be asked, is answered at once; any other is
// asked on a goroutine of its own, so asks wait for answers concurrently.
func (a *answerer) line(raw []byte) {
	var q struct {
		Key    string          `json:"key"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(raw, &q); err != nil {
		a.write(answer{Error: &contract.AskError{Code: jsonrpc.CodeParseError, Message: "ask: the line after ::ask:: is not a JSON object with key, method and params: " + err.Error()}})
		return
	}
	if err := contract.CheckAsk(q.Key, q.Method, q.Params); err != nil {
		a.write(answer{Key: q.Key, Error: &contract.AskError{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}})
		return
	}
	if a.ask == nil {
		a.write(answer{Key: q.Key, Error: &contract.AskError{Code: jsonrpc.CodeMethodNotFound, Message: q.Method + ": " + contract.CannotBeAsked}})
		return
	}
	a.wg.Go(func() {
		res, err := a.ask(a.ctx, q.Method, q.Params)
		a.write(answer{Key: q.Key, Result: res, Error: contract.AskErrorOf(q.Method, err)})
	})
}

// write sends one answer line; one the tool no longer reads is dropped.
func (a *answerer) write(ans answer) {
	b, err := json.Marshal(ans)
	if err != nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	_, _ = a.w.Write(append(b, '\n'))
}

// close ends the answers once the tool has exited and the run's context
// has ended (which voids the questions still waiting): a write blocked on a
// pipe nobody reads gives up.
func (a *answerer) close() {
	_ = a.w.Close()
	a.wg.Wait()
}
