package mcpserve

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
)

// complete answers completion/complete for an argument of a prompt or
// resource template the view serves, asking its server through the bridge
// on behalf of the MCP client (docs/mcp.md, "Resources and prompts").
func (v *view) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	p := req.Params
	if p == nil || p.Ref == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "completion/complete needs a ref (ref/prompt or ref/resource) and an argument"}
	}
	v.mu.RLock()
	cat := v.cat
	v.mu.RUnlock()
	var out *bridgev1.CompleteRequest
	switch p.Ref.Type {
	case "ref/prompt":
		e, ok := cat.prompts[p.Ref.Name]
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(
				"no prompt is presented as %q in workspace %q%s right now; list prompts/list for the names in force", p.Ref.Name, v.m.ws, v.inGroup())}
		}
		out = &bridgev1.CompleteRequest{Client: e.client, Prompt: e.name}
	case "ref/resource":
		e, ok := cat.templates[p.Ref.URI]
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(
				"no resource template %q is served in workspace %q%s right now; list resources/templates/list for the templates in force", p.Ref.URI, v.m.ws, v.inGroup())}
		}
		out = &bridgev1.CompleteRequest{Client: e.client, UriTemplate: e.name}
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("ref type %q is neither ref/prompt nor ref/resource", p.Ref.Type)}
	}
	out.Argument, out.Value = p.Argument.Name, p.Argument.Value
	if p.Context != nil {
		out.Context = p.Context.Arguments
	}
	as, err := v.m.opts.As(ctx, req)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: err.Error()}
	}
	ctx, cancel := context.WithTimeout(as, v.m.opts.callTimeout())
	defer cancel()
	res, err := v.m.opts.Bridge.Complete(ctx, out)
	if err != nil {
		return nil, bridgeError(err, "")
	}
	values := res.GetValues()
	if values == nil {
		values = []string{} // the spec's values is an array, never null
	}
	return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: values, Total: int(res.GetTotal()), HasMore: res.GetHasMore()}}, nil
}
