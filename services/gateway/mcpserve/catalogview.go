package mcpserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	"github.com/switchboard-run/switchboard/kit/suite/names"
)

// MetaPrompt is the _meta key naming a prompt's name on its server, next
// to MetaClient, as tools carry theirs.
const MetaPrompt = "run.switchboard/prompt"

// catalogEntry is one prompt, resource or template a view serves: the
// client that serves it and its definition as the bridge listed it.
type catalogEntry struct {
	client, name, def string
}

// viewCatalog is what one view serves of the catalog, keyed as the SDK
// keys it: prompts by presented name, resources by URI, templates by URI
// template.
type viewCatalog struct {
	prompts, resources, templates map[string]catalogEntry
}

// admits reports whether the view serves client's catalog: the workspace
// serves every member's; a group only the clients it presents a tool of
// (docs/mcp.md, "Resources and prompts").
func (v *view) admits(client string) bool {
	if v.client != "" {
		return client == v.client
	}
	if v.group == "" {
		return true
	}
	v.mu.RLock()
	defer v.mu.RUnlock()
	for _, e := range v.tools {
		if e.client == client && e.skipped == nil {
			return true
		}
	}
	return false
}

// applyCatalog makes the view's prompts, resources and templates the
// snapshot's, as apply does for tools: what is new or changed is added,
// what is gone removed, and the SDK sends each list_changed once per apply
// that changed its list. Where two clients offer the same URI (or the same
// presented prompt name), the first client by name serves it and the
// other's is left out, with a warning in the log. Call with m.gmu held.
func (v *view) applyCatalog(snap catalogSnap) {
	next := viewCatalog{prompts: map[string]catalogEntry{}, resources: map[string]catalogEntry{}, templates: map[string]catalogEntry{}}
	for _, client := range snap.sortedClients() {
		if !v.admits(client) {
			continue
		}
		c := snap[client]
		for _, p := range c.prompts {
			v.put(next.prompts, v.promptName(client, p.GetName()), catalogEntry{client: client, name: p.GetName(), def: p.GetDefinition()}, "prompt")
		}
		for _, r := range c.resources {
			v.put(next.resources, r.GetUri(), catalogEntry{client: client, name: r.GetUri(), def: r.GetDefinition()}, "resource")
		}
		for _, t := range c.templates {
			v.put(next.templates, t.GetUriTemplate(), catalogEntry{client: client, name: t.GetUriTemplate(), def: t.GetDefinition()}, "resource template")
		}
	}
	old := v.cat
	v.sync(old.prompts, next.prompts, v.addPrompt, func(keys ...string) { v.server.RemovePrompts(keys...) })
	v.sync(old.resources, next.resources, v.addResource, func(keys ...string) { v.server.RemoveResources(keys...) })
	v.sync(old.templates, next.templates, v.addTemplate, func(keys ...string) { v.server.RemoveResourceTemplates(keys...) })
	v.mu.Lock()
	v.cat = next
	v.mu.Unlock()
}

// promptName is a prompt's name in the view: presented as a tool's is
// (<client>_<prompt>, sanitised), or its own in one client's view.
func (v *view) promptName(client, name string) string {
	if v.client != "" {
		return name
	}
	return names.Presented(client, name)
}

// put adds e under key unless another client has it already.
func (v *view) put(into map[string]catalogEntry, key string, e catalogEntry, what string) {
	if had, ok := into[key]; ok {
		v.m.log.Warn("two mounted servers offer the same "+what+"; the first by client name serves it", "key", key,
			"served_by", had.client, "left_out", e.client, "group", v.group)
		return
	}
	into[key] = e
}

// sync applies the difference between old and next with add and remove.
// An entry the SDK cannot take is left out, with the reason in the log.
func (v *view) sync(old, next map[string]catalogEntry, add func(string, catalogEntry) error, remove func(...string)) {
	var gone []string
	for key, e := range next {
		if o, ok := old[key]; ok && o == e {
			continue
		}
		if err := add(key, e); err != nil {
			v.m.log.Warn("a mounted server's prompt or resource is not offered over MCP", "key", key, "client", e.client, "group", v.group, "why", err)
			delete(next, key)
			if _, ok := old[key]; ok {
				gone = append(gone, key)
			}
		}
	}
	for key := range old {
		if _, ok := next[key]; !ok {
			gone = append(gone, key)
		}
	}
	if len(gone) > 0 {
		remove(gone...)
	}
}

// addPrompt serves one prompt under its presented name.
func (v *view) addPrompt(presented string, e catalogEntry) (err error) {
	var p mcp.Prompt
	if err := json.Unmarshal([]byte(e.def), &p); err != nil {
		return fmt.Errorf("its definition is not a prompt: %w", err)
	}
	p.Name = presented
	p.Meta = withMeta(p.Meta, map[string]any{MetaClient: e.client, MetaPrompt: e.name})
	defer recoverAs(&err)
	v.server.AddPrompt(&p, v.m.promptHandler(e))
	return nil
}

// addResource serves one resource under its own URI.
func (v *view) addResource(_ string, e catalogEntry) (err error) {
	var r mcp.Resource
	if err := json.Unmarshal([]byte(e.def), &r); err != nil {
		return fmt.Errorf("its definition is not a resource: %w", err)
	}
	r.Meta = withMeta(r.Meta, map[string]any{MetaClient: e.client})
	defer recoverAs(&err)
	v.server.AddResource(&r, v.m.readHandler(e.client))
	return nil
}

// addTemplate serves one resource template under its own URI template.
func (v *view) addTemplate(_ string, e catalogEntry) (err error) {
	var t mcp.ResourceTemplate
	if err := json.Unmarshal([]byte(e.def), &t); err != nil {
		return fmt.Errorf("its definition is not a resource template: %w", err)
	}
	t.Meta = withMeta(t.Meta, map[string]any{MetaClient: e.client})
	defer recoverAs(&err)
	v.server.AddResourceTemplate(&t, v.m.readHandler(e.client))
	return nil
}

// recoverAs turns the SDK's panic at a definition it cannot serve into
// the reason it is left out; the panic comes before the server changes.
func recoverAs(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("the MCP SDK refused it: %v", r)
	}
}

// withMeta returns meta with more added, the server's own keys kept.
func withMeta(meta mcp.Meta, more map[string]any) mcp.Meta {
	out := mcp.Meta{}
	for k, val := range meta {
		out[k] = val
	}
	for k, val := range more {
		out[k] = val
	}
	return out
}

// readHandler reads a resource of client through the bridge, on behalf of
// the MCP client that asked (docs/mcp.md, "Resources and prompts").
func (m *Mirror) readHandler(client string) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		uri := req.Params.URI
		as, err := m.opts.As(ctx, req)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: err.Error()}
		}
		ctx, cancel := context.WithTimeout(as, m.opts.callTimeout())
		defer cancel()
		res, err := m.opts.Bridge.ReadResource(ctx, &bridgev1.ReadResourceRequest{Client: client, Uri: uri})
		if err != nil {
			return nil, bridgeError(err, uri)
		}
		out := &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{}}
		for _, c := range res.GetContents() {
			rc := &mcp.ResourceContents{URI: c.GetUri(), MIMEType: c.GetMimeType(), Text: c.GetText(), Blob: c.GetBlob()}
			if c.GetMeta() != "" {
				_ = json.Unmarshal([]byte(c.GetMeta()), &rc.Meta) // the bridge encoded it; a bad one is dropped
			}
			out.Contents = append(out.Contents, rc)
		}
		return out, nil
	}
}

// promptHandler gets a prompt of e's client through the bridge, on behalf
// of the MCP client that asked.
func (m *Mirror) promptHandler(e catalogEntry) mcp.PromptHandler {
	return func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		as, err := m.opts.As(ctx, req)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: err.Error()}
		}
		ctx, cancel := context.WithTimeout(as, m.opts.callTimeout())
		defer cancel()
		params, err := forwarded(req.Params.InputResponses, req.Params.RequestState, askable(req.Params.Meta, req.Session), "", askNone)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "the prompt's input responses could not be passed on: " + err.Error()}
		}
		res, err := m.opts.Bridge.GetPrompt(ctx, &bridgev1.GetPromptRequest{Client: e.client, Name: e.name, Arguments: req.Params.Arguments, McpParams: params})
		if err != nil {
			return nil, bridgeError(err, "")
		}
		if res.InputRequired != nil {
			return promptInput(e, res.GetInputRequired())
		}
		out := &mcp.GetPromptResult{Description: res.GetDescription(), Messages: []*mcp.PromptMessage{}}
		for _, j := range res.GetMessages() {
			var pm mcp.PromptMessage
			if err := json.Unmarshal([]byte(j), &pm); err != nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
					Message: fmt.Sprintf("prompt %q of client %q: a message could not be read: %v", e.name, e.client, err)}
			}
			out.Messages = append(out.Messages, &pm)
		}
		return out, nil
	}
}

// bridgeError is the JSON-RPC error for a refusal of the bridge, with its
// sentence: a resource the server does not have keeps MCP's "not found"
// code and names the URI in its data.
func bridgeError(err error, uri string) error {
	st := status.Convert(err)
	switch {
	case st.Code() == codes.NotFound && uri != "":
		data, _ := json.Marshal(map[string]string{"uri": uri})
		return &jsonrpc.Error{Code: mcp.CodeResourceNotFound, Message: st.Message(), Data: data}
	case st.Code() == codes.NotFound, st.Code() == codes.InvalidArgument, st.Code() == codes.FailedPrecondition:
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: st.Message()}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: st.Message()}
}

// unknownCatalog gives the SDK's refusals of a prompt or resource the view
// does not serve a sentence naming the value and the workspace, keeping
// their codes.
func (v *view) unknownCatalog(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		var rpcErr *jsonrpc.Error
		if err == nil || !errors.As(err, &rpcErr) {
			return res, err
		}
		switch r := req.(type) {
		case *mcp.ReadResourceRequest:
			if r.Params != nil && rpcErr.Message == "Resource not found" {
				rpcErr.Message = fmt.Sprintf("no resource %q is served in workspace %q%s right now; list resources/list and resources/templates/list for the URIs in force",
					r.Params.URI, v.m.ws, v.inGroup())
			}
		case *mcp.GetPromptRequest:
			if r.Params != nil && rpcErr.Message == fmt.Sprintf("unknown prompt %q", r.Params.Name) {
				rpcErr.Message = fmt.Sprintf("no prompt is presented as %q in workspace %q%s right now; list prompts/list for the names in force",
					r.Params.Name, v.m.ws, v.inGroup())
			}
		}
		return res, err
	}
}

func (v *view) inGroup() string {
	if v.group == "" {
		return ""
	}
	return fmt.Sprintf(" (group %q)", v.group)
}
