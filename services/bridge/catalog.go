package bridge

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	"github.com/switchboard-run/switchboard/services/bridge/internal/catalog"
	"github.com/switchboard-run/switchboard/services/bridge/internal/upstream"
)

// The catalog RPCs (docs/mcp.md, "Resources and prompts"): a mounted MCP
// server's resources, templates and prompts as its session last listed
// them on this replica, and reads and prompts forwarded to that session.

// MaxURIBytes, MaxPromptArgs and MaxMCPParams bound what a caller may send
// upstream.
// readTimeout bounds one read or prompt when the caller sets no shorter
// deadline: an answer of a few MiB takes a while to encode and decode.
const (
	readTimeout      = time.Minute
	MaxURIBytes      = 4096
	MaxPromptArgs    = 64
	MaxPromptArgSize = 64 << 10
	MaxMCPParams     = 256 << 10
)

// session returns client's running MCP session here, a plugin backend's
// or an OpenAPI API's absence (nil, nil: it has no catalog), or the
// refusal naming why none runs.
func (s *Service) session(client string) (*upstream.Session, error) {
	s.mu.Lock()
	e := s.entries[client]
	s.mu.Unlock()
	if e == nil {
		return nil, absent(client)
	}
	if e.cfg.GetPlugin() != nil || e.cfg.GetOpenapi() != nil {
		return nil, nil
	}
	m := e.mounted()
	if m == nil {
		return nil, status.Errorf(codes.Unavailable,
			"MCP server %q is exclusive and runs on another bridge replica now (ListServers' running_on names it); this replica has no session with it", client)
	}
	m.mu.Lock()
	sess := m.sess
	m.mu.Unlock()
	if sess == nil {
		return nil, status.Errorf(codes.Unavailable, "MCP server %q is not running now (%s); ask again once it runs",
			client, m.sup.Status().State)
	}
	return sess, nil
}

// listed is client's catalog; a plugin backend's or an API's is empty. A server the
// caller of ctx may not see is absent.
func (s *Service) listed(ctx context.Context, client string) (upstream.Catalog, error) {
	if err := s.checkVisible(ctx, client); err != nil {
		return upstream.Catalog{}, err
	}
	sess, err := s.session(client)
	if err != nil || sess == nil {
		return upstream.Catalog{}, err
	}
	return sess.Catalog(), nil
}

// ListResources answers with the server's resources (BridgeService.ListResources).
func (s *Service) ListResources(ctx context.Context, req *bridgev1.ListResourcesRequest) (*bridgev1.ListResourcesResponse, error) {
	c, err := s.listed(ctx, req.GetClient())
	if err != nil {
		return nil, err
	}
	return &bridgev1.ListResourcesResponse{Resources: catalog.Resources(c.Resources)}, nil
}

// ListResourceTemplates answers with the server's resource templates
// (BridgeService.ListResourceTemplates).
func (s *Service) ListResourceTemplates(ctx context.Context, req *bridgev1.ListResourceTemplatesRequest) (*bridgev1.ListResourceTemplatesResponse, error) {
	c, err := s.listed(ctx, req.GetClient())
	if err != nil {
		return nil, err
	}
	return &bridgev1.ListResourceTemplatesResponse{Templates: catalog.Templates(c.Templates)}, nil
}

// ListPrompts answers with the server's prompts (BridgeService.ListPrompts).
func (s *Service) ListPrompts(ctx context.Context, req *bridgev1.ListPromptsRequest) (*bridgev1.ListPromptsResponse, error) {
	c, err := s.listed(ctx, req.GetClient())
	if err != nil {
		return nil, err
	}
	return &bridgev1.ListPromptsResponse{Prompts: catalog.Prompts(c.Prompts)}, nil
}

// ReadResource forwards a read to the server (BridgeService.ReadResource).
func (s *Service) ReadResource(ctx context.Context, req *bridgev1.ReadResourceRequest) (*bridgev1.ReadResourceResponse, error) {
	client, uri := req.GetClient(), req.GetUri()
	if uri == "" || len(uri) > MaxURIBytes {
		return nil, status.Errorf(codes.InvalidArgument, "resource URI %q must be 1 to %d bytes", uri, MaxURIBytes)
	}
	if err := s.checkVisible(ctx, client); err != nil {
		return nil, err
	}
	sess, err := s.session(client)
	if err != nil {
		return nil, err
	}
	if sess == nil {
		return nil, status.Errorf(codes.NotFound, "MCP server %q has no resource %q: it is %s, which serves tools only", client, uri, s.toolsOnly(client))
	}
	if !listsResource(sess.Catalog(), uri) {
		return nil, status.Errorf(codes.NotFound,
			"MCP server %q lists no resource %q, and none of its resource templates matches it: only what a server lists is read", client, uri)
	}
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	res, err := sess.ReadResource(ctx, uri)
	if err != nil {
		return nil, upstreamError(err, client, fmt.Sprintf("resource %q", uri), true)
	}
	return catalog.Read(res), nil
}

// listsResource is the one rule every front reads by (the REST route, gRPC,
// the MCP endpoint): a URI the server lists, or one a template it lists
// matches, as the MCP SDK matches them. Anything else — file:///etc/… —
// never goes upstream, where a server might read it from its own disk.
func listsResource(c upstream.Catalog, uri string) bool {
	if slices.ContainsFunc(c.Resources, func(r *mcp.Resource) bool { return r.URI == uri }) {
		return true
	}
	return slices.ContainsFunc(c.Templates, func(t *mcp.ResourceTemplate) bool {
		tmpl, err := uritemplate.New(t.URITemplate)
		return err == nil && tmpl.Regexp().MatchString(uri)
	})
}

// GetPrompt forwards prompts/get to the server (BridgeService.GetPrompt).
func (s *Service) GetPrompt(ctx context.Context, req *bridgev1.GetPromptRequest) (*bridgev1.GetPromptResponse, error) {
	client, name := req.GetClient(), req.GetName()
	if len(req.GetArguments()) > MaxPromptArgs {
		return nil, status.Errorf(codes.InvalidArgument, "prompt %q is given %d arguments; at most %d are passed", name, len(req.GetArguments()), MaxPromptArgs)
	}
	for k, v := range req.GetArguments() {
		if len(k)+len(v) > MaxPromptArgSize {
			return nil, status.Errorf(codes.InvalidArgument, "argument %q of prompt %q is %d bytes; at most %d are passed", k, name, len(k)+len(v), MaxPromptArgSize)
		}
	}
	c, err := s.listed(ctx, client)
	if err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(c.Prompts, func(p *mcp.Prompt) bool { return p.Name == name }) {
		return nil, status.Errorf(codes.NotFound, "MCP server %q lists no prompt %q", client, name)
	}
	sess, err := s.session(client)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	var from *upstream.ClientParams
	if req.McpParams != nil {
		if len(req.GetMcpParams()) > MaxMCPParams {
			return nil, status.Errorf(codes.InvalidArgument, "mcp_params of prompt %q is %d bytes; at most %d are passed", name, len(req.GetMcpParams()), MaxMCPParams)
		}
		if from, err = upstream.ParseClientParams(req.GetMcpParams()); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "prompt %q: %v", name, err)
		}
	}
	res, err := sess.GetPrompt(ctx, name, req.GetArguments(), from)
	if err != nil {
		return nil, upstreamError(err, client, fmt.Sprintf("prompt %q", name), false)
	}
	if res.NeedsInput() {
		return catalog.PromptInput(res)
	}
	out, err := catalog.Prompt(res)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "prompt %q of MCP server %q: %v", name, client, err)
	}
	return out, nil
}

// upstreamError turns what the server answered into a status naming what
// was asked: a resource it does not have is NotFound, any other JSON-RPC
// error a refusal, and no answer Unavailable.
func upstreamError(err error, client, what string, resource bool) error {
	var rpcErr *jsonrpc.Error
	switch {
	case resource && errors.As(err, &rpcErr) && (rpcErr.Code == mcp.CodeResourceNotFound || rpcErr.Code == -32002):
		return status.Errorf(codes.NotFound, "MCP server %q has no %s (it answered %d %s)", client, what, rpcErr.Code, rpcErr.Message)
	case errors.As(err, &rpcErr):
		return status.Errorf(codes.FailedPrecondition, "MCP server %q refused %s: %d %s", client, what, rpcErr.Code, rpcErr.Message)
	case errors.Is(err, context.DeadlineExceeded):
		return status.Errorf(codes.DeadlineExceeded, "MCP server %q did not answer for %s in time", client, what)
	}
	return status.Errorf(codes.Unavailable, "MCP server %q could not be asked for %s: %v", client, what, err)
}
