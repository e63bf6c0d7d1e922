package bridge

import (
	"context"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
)

// MaxCompletions is MCP's bound on the suggestions of one answer;
// MaxCompletionBytes bounds each (a longer one is left out, as though
// there were more).
const (
	MaxCompletions     = 100
	MaxCompletionBytes = 4096
)

// Complete forwards completion/complete to the server (BridgeService.Complete)
// for an argument of a prompt or template it lists; anything else never
// goes upstream.
func (s *Service) Complete(ctx context.Context, req *bridgev1.CompleteRequest) (*bridgev1.CompleteResponse, error) {
	client, prompt, tmpl := req.GetClient(), req.GetPrompt(), req.GetUriTemplate()
	if (prompt == "") == (tmpl == "") {
		return nil, status.Errorf(codes.InvalidArgument, "a completion names a prompt or a resource template, exactly one (prompt %q, uri_template %q)", prompt, tmpl)
	}
	if len(req.GetContext()) > MaxPromptArgs {
		return nil, status.Errorf(codes.InvalidArgument, "a completion is given %d resolved arguments; at most %d are passed", len(req.GetContext()), MaxPromptArgs)
	}
	for k, v := range req.GetContext() {
		if len(k)+len(v) > MaxPromptArgSize {
			return nil, status.Errorf(codes.InvalidArgument, "resolved argument %q is %d bytes; at most %d are passed", k, len(k)+len(v), MaxPromptArgSize)
		}
	}
	if n := len(req.GetArgument()) + len(req.GetValue()); req.GetArgument() == "" || n > MaxPromptArgSize {
		return nil, status.Errorf(codes.InvalidArgument, "the argument to complete (%q) must be named, and name and value at most %d bytes (they are %d)", req.GetArgument(), MaxPromptArgSize, n)
	}
	c, err := s.listed(ctx, client)
	if err != nil {
		return nil, err
	}
	ref, what := &mcp.CompleteReference{Type: "ref/prompt", Name: prompt}, fmt.Sprintf("prompt %q", prompt)
	if tmpl != "" {
		ref, what = &mcp.CompleteReference{Type: "ref/resource", URI: tmpl}, fmt.Sprintf("resource template %q", tmpl)
		if !slices.ContainsFunc(c.Templates, func(t *mcp.ResourceTemplate) bool { return t.URITemplate == tmpl }) {
			return nil, status.Errorf(codes.NotFound, "MCP server %q lists no resource template %q", client, tmpl)
		}
	} else if !slices.ContainsFunc(c.Prompts, func(p *mcp.Prompt) bool { return p.Name == prompt }) {
		return nil, status.Errorf(codes.NotFound, "MCP server %q lists no prompt %q", client, prompt)
	}
	sess, err := s.session(client)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	params := &mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteParamsArgument{Name: req.GetArgument(), Value: req.GetValue()}}
	if len(req.GetContext()) > 0 {
		params.Context = &mcp.CompleteContext{Arguments: req.GetContext()}
	}
	res, err := sess.Complete(ctx, params)
	if err != nil {
		return nil, upstreamError(err, client, fmt.Sprintf("completions of argument %q of %s", req.GetArgument(), what), false)
	}
	return completions(res.Completion), nil
}

// completions bounds a server's suggestions.
func completions(c mcp.CompletionResultDetails) *bridgev1.CompleteResponse {
	out := &bridgev1.CompleteResponse{Values: make([]string, 0, min(len(c.Values), MaxCompletions)), HasMore: c.HasMore}
	if c.Total > 0 && c.Total <= 1<<31-1 {
		out.Total = int32(c.Total)
	}
	for _, v := range c.Values {
		if len(out.Values) == MaxCompletions || len(v) > MaxCompletionBytes {
			out.HasMore = true
			continue
		}
		out.Values = append(out.Values, v)
	}
	return out
}
