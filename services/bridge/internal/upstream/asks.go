package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A session-era server asks its client in requests (elicitation/create,
// sampling/createMessage): the bridge passes one to the driver of the
// session's one call in flight when it can be asked (Hearing.Ask), and
// refuses any other at once, saying why. A 2026-07-28 server asks with an
// input_required result instead (ClientParams).
const (
	samplingRefusal    = "sampling/createMessage refused: the client is a Switchboard bridge, which runs this tool for an agent through a mailbox, and this call's agent cannot be asked to sample; the call must finish without sampling"
	elicitationRefusal = "elicitation/create refused: the client is a Switchboard bridge, which runs this tool for an agent through a mailbox, and this call's agent cannot be asked; the call must finish without asking"
	// codeUnsupported is the SDK client's code for a sampling request it
	// has no handler for (its codeUnsupportedMethod).
	codeUnsupported = -31001
)

// askedCapabilities are what the bridge declares it can be asked.
func askedCapabilities() *mcp.ClientCapabilities {
	return &mcp.ClientCapabilities{
		Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}},
		Sampling:    &mcp.SamplingCapabilities{},
	}
}

// asks passes the server's elicitation and sampling requests to the
// asking call's driver, or refuses them; everything else goes on to the
// SDK's handlers.
func (s *Session) asks(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		var refusal *jsonrpc.Error
		var result mcp.Result
		switch method {
		case "sampling/createMessage":
			refusal, result = &jsonrpc.Error{Code: codeUnsupported, Message: samplingRefusal}, &mcp.CreateMessageResult{}
		case "elicitation/create":
			refusal, result = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: elicitationRefusal}, &mcp.ElicitResult{}
		default:
			return next(ctx, method, req)
		}
		ask := s.asker()
		if ask == nil || req == nil {
			return nil, refusal
		}
		params, err := json.Marshal(req.GetParams())
		if err != nil {
			return nil, refusal
		}
		answer, err := ask(ctx, method, params)
		if err != nil {
			if rpcErr, ok := errors.AsType[*jsonrpc.Error](err); ok {
				return nil, rpcErr
			}
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("%s: the call's agent was asked, but no answer came: %v", method, err)}
		}
		if err := json.Unmarshal(answer, result); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("%s: the call's agent answered with what is not its result: %v", method, err)}
		}
		return result, nil
	}
}

// asker is the Ask of the session's one call in flight, when it is alone
// and its driver can be asked; nil otherwise.
func (s *Session) asker() func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.calls != 1 {
		return nil
	}
	for h := range s.hearing {
		return h.Ask
	}
	return nil
}
