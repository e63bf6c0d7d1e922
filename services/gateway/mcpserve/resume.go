package mcpserve

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
	"github.com/switchboard-run/switchboard/kit/suite/contract"
	"github.com/switchboard-run/switchboard/kit/suite/mailboxcall"
)

// A stateless client cannot be asked during its call, so a host's
// questions reach it as an input_required result whose requestState names
// the invocation, which keeps running; its retry posts the answers and
// waits on the same invocation (docs/mcp.md, "Questions").

// resumePrefix marks a requestState this endpoint gave; any other belongs
// to a mounted server, and goes to it (inputrequired.go).
const resumePrefix = "run.switchboard/invocation:"

// resumeState is the requestState naming invocation id of tool name, whose
// notes up to after the client has seen.
func resumeState(id string, after int64, name string) string {
	return resumePrefix + id + ":" + strconv.FormatInt(after, 10) + ":" + name
}

// resumed reads a retry's requestState: the invocation it resumes and the
// notes seen, ok when the state is this endpoint's; an error when it is
// ours but not one we gave for this tool.
func resumed(state, name string) (id string, after int64, ok bool, err error) {
	rest, ours := strings.CutPrefix(state, resumePrefix)
	if !ours {
		return "", 0, false, nil
	}
	parts := strings.SplitN(rest, ":", 3)
	if len(parts) == 3 {
		after, err = strconv.ParseInt(parts[1], 10, 64)
	}
	if len(parts) != 3 || err != nil || after < 0 || parts[0] == "" {
		return "", 0, false, fmt.Errorf("requestState %q is not one this endpoint gave: call the tool again without it", capture.Cap(state, 80))
	}
	if parts[2] != name {
		return "", 0, false, fmt.Errorf("requestState names invocation %s of tool %q, not of %q: retry the tool that asked", parts[0], parts[2], name)
	}
	return parts[0], after, true, nil
}

// answerInputs posts a retry's answers on invocation id; a refusal result
// when one is refused for a reason other than its question being void (the
// call ended or was answered meanwhile: its capture answers the retry).
func (m *Mirror) answerInputs(ctx context.Context, name, id string, responses mcp.InputResponseMap) *mcp.CallToolResult {
	if len(responses) > contract.MaxQuestions {
		return refusal(fmt.Sprintf("inputResponses holds %d answers; a call asks at most %d questions", len(responses), contract.MaxQuestions))
	}
	for q, res := range responses {
		b, err := json.Marshal(res)
		if err != nil {
			return refusal(fmt.Sprintf("inputResponses[%q] could not be passed on: %v", capture.Cap(q, 80), err))
		}
		_, err = m.mailbox.Answer(ctx, &mailboxv1.AnswerRequest{Invocation: id, Question: q, Result: string(b)})
		if err != nil && status.Code(err) != codes.FailedPrecondition {
			return refusal(fmt.Sprintf("invocation %s of tool %q: %s", id, name, status.Convert(err).Message()))
		}
	}
	return nil
}

// resumeCall waits, under ctx, for the capture of invocation id, as the
// first call's Call would have.
func (m *Mirror) resumeCall(ctx context.Context, id string) *running {
	c := &running{named: make(chan struct{}), done: make(chan callResult, 1)}
	c.name(id)
	go func() {
		res, err := mailboxcall.Await(ctx, m.mailbox.MailboxServiceClient, id)
		c.done <- callResult{res: res, err: err}
	}()
	return c
}

// inputRequest is the input_required result asking the question n and any
// others already read (more), with the state that resumes invocation id.
func inputRequest(name, id string, n *mailboxv1.ProgressNote, more <-chan *mailboxv1.ProgressNote) *mcp.CallToolResult {
	notes := []*mailboxv1.ProgressNote{n}
	for drained := false; !drained; {
		select {
		case n := <-more:
			notes = append(notes, n)
		default:
			drained = true
		}
	}
	requests, err := inputRequests(notes)
	if err != nil {
		return refusal(fmt.Sprintf("invocation %s of tool %q asks its client what cannot be passed on: %v", id, name, err))
	}
	return &mcp.CallToolResult{InputRequests: requests, RequestState: resumeState(id, notes[len(notes)-1].GetSeq(), name)}
}

// inputRequests is the questions among notes as MCP input requests, each
// under its question's id.
func inputRequests(notes []*mailboxv1.ProgressNote) (mcp.InputRequestMap, error) {
	type request struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	asked := map[string]request{}
	for _, n := range notes {
		if q := n.GetQuestion(); q != nil {
			asked[q.GetId()] = request{Method: q.GetMethod(), Params: json.RawMessage(q.GetParams())}
		}
	}
	b, err := json.Marshal(asked)
	if err != nil {
		return nil, err
	}
	var requests mcp.InputRequestMap
	if err := json.Unmarshal(b, &requests); err != nil {
		return nil, err
	}
	return requests, nil
}

// waiting is the questions among notes whose answers have not reached the
// host (no answered note names them) and that the latest hand-off's run
// asked (one before it is void: that run ended), oldest first.
func waiting(notes []*mailboxv1.ProgressNote, handOffs int32) []*mailboxv1.ProgressNote {
	var out []*mailboxv1.ProgressNote
	for _, n := range notes {
		if q := n.GetQuestion(); q != nil && (q.GetHandOff() == 0 || q.GetHandOff() >= handOffs) {
			out = append(out, n)
		}
		if a := n.GetAnswered(); a != "" {
			out = slices.DeleteFunc(out, func(q *mailboxv1.ProgressNote) bool { return q.GetQuestion().GetId() == a })
		}
	}
	return out
}
