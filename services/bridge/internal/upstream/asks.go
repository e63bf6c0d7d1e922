package upstream

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The bridge declares no sampling or elicitation capability, so a server
// should not ask for either; one that asks anyway during a call is refused
// at once, with the codes the SDK's client uses and a sentence the server
// can show its user, rather than the SDK's terse "client does not support
// CreateMessage". A 2026-07-28 server asks with an input_required result
// instead, which goes back to the driver (ClientParams): no request
// reaches here.
const (
	samplingRefusal    = "sampling/createMessage refused: the client is a Switchboard bridge, which runs this tool for an agent through a mailbox and has no model to sample; the call must finish without sampling"
	elicitationRefusal = "elicitation/create refused: the client is a Switchboard bridge, which runs this tool for an agent through a mailbox and has no user to ask; the call must finish without asking"
	// codeUnsupported is the SDK client's code for a sampling request it
	// has no handler for (its codeUnsupportedMethod).
	codeUnsupported = -31001
)

// refuseAsks answers the server's sampling and elicitation requests with
// the refusals above; everything else goes on to the SDK's handlers.
func refuseAsks(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "sampling/createMessage":
			return nil, &jsonrpc.Error{Code: codeUnsupported, Message: samplingRefusal}
		case "elicitation/create":
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: elicitationRefusal}
		}
		return next(ctx, method, req)
	}
}
