package mcpserve

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/proto"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/mcptelemetry"
)

// view is one MCP server over a workspace's tools: every tool (the
// workspace endpoint), the tools of one group as the group presents them
// (docs/mcp.md, "Tool groups"), or one client's under their own names
// (servers.go). Each has its own sessions, so a group's list_changed goes
// to that group's clients only.
type view struct {
	m      *Mirror
	group  string // "" for the whole workspace or one client's
	client string // set for one client's view
	server *mcp.Server
	impl   *mcp.Implementation // the server's, which 2026-07-28 results name in _meta
	// implJSON is impl encoded once, for results passed on as bytes.
	implJSON json.RawMessage

	mu    sync.RWMutex
	tools map[string]entry // by the name this view presents; written by the refresher only
	cat   viewCatalog      // the prompts and resources it serves; written under m.gmu only

	metas metaVerdicts // which tools/call _meta the fast path answers, by their bytes
}

func (m *Mirror) newView(group, client string) *view {
	v := &view{m: m, group: group, client: client, tools: map[string]entry{}}
	caps := &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}}
	if m.opts.Bridge != nil {
		// Declared from the start, so a client listens for their
		// list_changed before any server is mounted; log messages are
		// a mounted server's, passed on (logs.go).
		caps.Prompts = &mcp.PromptCapabilities{ListChanged: true}
		caps.Resources = &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true}
		caps.Logging = &mcp.LoggingCapabilities{}
	}
	title, about := "Switchboard workspace "+m.ws, fmt.Sprintf("The tools of the Switchboard workspace %q.", m.ws)
	naming := " A tool named <client>_<tool> runs on that client's machine;"
	switch {
	case group != "":
		title += " group " + group
		about = fmt.Sprintf("The tools of group %q of the Switchboard workspace %q.", group, m.ws)
	case client != "":
		title += " server " + client
		about = fmt.Sprintf("The tools, prompts and resources of %q in the Switchboard workspace %q, under their own names.", client, m.ws)
		naming = " Each tool runs on " + client + ";"
	}
	if m.opts.tasks {
		// server/discover's capabilities, and initialize's in the era with
		// sessions: the SDK sends these in both.
		caps.AddExtension(TasksExtension, map[string]any{})
	}
	v.impl = &mcp.Implementation{Name: "switchboard", Title: title, Version: version()}
	v.implJSON = jsonValue(v.impl)
	opts := &mcp.ServerOptions{
		Instructions: about + naming + " each call is routed through Switchboard's mailbox. A call still running when its time is up is " +
			"answered with its invocation handle, which can be collected later.",
		Capabilities: caps,
		PageSize:     m.opts.PageSize,
		Logger:       sdkLog(m.log),
		SetCacheable: privateCache,
	}
	if m.opts.Bridge != nil {
		// Declared from the start, as prompts and resources are.
		opts.CompletionHandler = v.complete
		opts.SubscribeHandler, opts.UnsubscribeHandler = v.subscribe, v.unsubscribe
	}
	v.server = mcp.NewServer(v.impl, opts)
	v.server.AddReceivingMiddleware(v.unknownTools, v.unknownCatalog, m.levels.track)
	if m.opts.Metrics != nil {
		// Added last, so outermost: the refusals above are counted too.
		v.server.AddReceivingMiddleware(m.opts.Metrics.Middleware(mcptelemetry.Endpoint))
	}
	return v
}

// privateCache marks every listing cacheScope "private": it is served only
// to callers who may see the workspace, so no shared cache may keep it.
func privateCache(_ context.Context, _ mcp.Request, c *mcp.Cacheable) { c.CacheScope = "private" }

// idle reports whether no session is open on the view.
func (v *view) idle() bool {
	for range v.server.Sessions() {
		return false
	}
	return true
}

// closeSessions ends every session of the view.
func (v *view) closeSessions() {
	for ss := range v.server.Sessions() {
		_ = ss.Close()
	}
}

// apply makes the server's tools the listing's: it adds what is new or
// changed and removes what is gone. The SDK coalesces the changes of one
// apply into one notifications/tools/list_changed per session; an
// unchanged listing changes nothing and notifies nobody.
func (v *view) apply(list []*registryv1.PresentedTool) {
	v.mu.RLock()
	old := v.tools
	v.mu.RUnlock()
	next := make(map[string]entry, len(list))
	var gone []string
	for _, p := range list {
		name := p.GetPresentedName()
		e := entry{client: p.GetClient(), def: p.GetTool()}
		if o, ok := old[name]; ok && o.client == e.client && proto.Equal(o.def, e.def) {
			next[name] = o
			continue
		}
		tool, err := present(p)
		if err == nil {
			err = v.add(tool, e)
		}
		if err != nil {
			v.m.log.Warn("a tool is not offered over MCP", "tool", name, "client", e.client, "group", v.group, "why", err)
			e.skipped = err
			if o, ok := old[name]; ok && o.skipped == nil {
				gone = append(gone, name)
			}
		}
		next[name] = e
	}
	for name, o := range old {
		if _, ok := next[name]; !ok && o.skipped == nil {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		v.server.RemoveTools(gone...)
	}
	v.mu.Lock()
	v.tools = next
	v.mu.Unlock()
}

// add registers one tool. AddTool panics on a definition it cannot serve
// (some checks are the SDK's own, unexported); the panic happens before the
// server changes, so it is turned into the reason the tool is skipped.
func (v *view) add(tool *mcp.Tool, e entry) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the MCP SDK refused it: %v", r)
		}
	}()
	v.server.AddTool(tool, v.m.handler(tool.Name, e))
	return nil
}

// unknownTools answers a tools/call of a name the view does not offer
// with a result carrying the sentence (isError), as for every other
// refusal, rather than the SDK's JSON-RPC error: a model reads results. A
// tool outside a group gets the very sentence of a tool that does not
// exist (docs/design.md §4).
func (v *view) unknownTools(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if call, ok := req.(*mcp.CallToolRequest); ok && call.Params != nil {
			if _, refused := v.resolve(call.Params.Name); refused != nil {
				if rev, _ := call.Params.Meta[mcp.MetaKeyProtocolVersion].(string); rev >= firstStatelessRevision {
					refused = completed(refused)
				}
				return refused, nil
			}
		}
		return next(ctx, method, req)
	}
}

// resolve returns the entry a tools/call of name runs, or the refusal of a
// name the view does not offer (a result, as every refusal is).
func (v *view) resolve(name string) (entry, *mcp.CallToolResult) {
	v.mu.RLock()
	e, known := v.tools[name]
	v.mu.RUnlock()
	if !known {
		if held := v.m.heldRefusal(v.client, name); held != "" {
			return e, refusal(held)
		}
	}
	switch {
	case !known && v.client != "":
		return e, refusal(fmt.Sprintf("%q offers no tool %q in workspace %q right now; list its tools (tools/list) for the names in force",
			v.client, name, v.m.ws))
	case !known:
		return e, refusal(fmt.Sprintf("no tool is presented as %q in workspace %q right now; list the workspace's tools (tools/list) for the names in force",
			name, v.m.ws))
	case e.skipped != nil:
		return e, refusal(fmt.Sprintf("tool %q of client %q is not offered over MCP: %v", e.def.GetName(), e.client, e.skipped))
	}
	return e, nil
}
