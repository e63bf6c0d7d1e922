package mcpserve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/names"
	"github.com/switchboard-run/switchboard/kit/suite/registryview"
	"github.com/switchboard-run/switchboard/kit/suite/toolgroups"
	"github.com/switchboard-run/switchboard/services/gateway/internal/httperr"
)

// callerHeader and workspacesHeader carry, from ServeHTTP to the
// tools/call, resources/read and prompts/get handlers, the identity the gateway resolved for the HTTP
// request and the workspaces its credential states: the SDK hands a
// handler that request's headers (RequestExtra.Header) and nothing else of
// it, while the handler's context belongs to the session. ServeHTTP
// replaces any value a client sent, so the headers only ever hold what the
// gateway's identity middleware found.
const (
	callerHeader     = "Switchboard-Mcp-Caller"
	workspacesHeader = "Switchboard-Mcp-Workspaces"
)

// ServeHTTP serves /mcp/{workspace}, /mcp/{workspace}/{group} (one tool
// group of the workspace, docs/mcp.md "Tool groups"),
// /mcp/{workspace}/servers/{client} (one client's, servers.go) and /mcp (the default
// workspace) for a caller the gateway's identity middleware admitted (the identity is in
// the request's context) and the gateway's hostguard let through.
func (w *Workspaces) ServeHTTP(w0 http.ResponseWriter, r *http.Request) {
	rw := w0
	id, ok := identity.FromContext(r.Context())
	if !ok {
		httperr.Write(rw, http.StatusUnauthorized, "no identity: the MCP endpoint serves identified callers only")
		return
	}
	if id.Grade != identity.Driver && id.Grade != identity.Admin {
		// Every MCP act is a driver's (list, call, cancel); the mailbox
		// would refuse the calls, and the listing must not leak either.
		httperr.Write(rw, http.StatusForbidden, fmt.Sprintf(
			"%q is %s and may not use the MCP endpoint: listing and calling tools takes a driver or an admin", id.Name, id.Grade.Article()))
		return
	}
	name := r.PathValue("workspace")
	if name == "" {
		name = DefaultWorkspace
	}
	if err := names.CheckWorkspace(name); err != nil {
		httperr.Write(rw, http.StatusBadRequest, err.Error())
		return
	}
	// The mirror is shared by every caller of the workspace, so the
	// workspace is checked here: outside the caller's it is absent, with the
	// registry's sentence (docs/design.md §4).
	sees, err := registryview.Sees(w.opts.Self(r.Context()), w.opts.Registry, id)
	if err != nil {
		httperr.WriteErr(rw, err)
		return
	}
	if !sees.Sees(name) {
		httperr.Write(rw, http.StatusNotFound, fmt.Sprintf("unknown workspace %q", name))
		return
	}
	group := r.PathValue("group")
	if group != "" {
		if err := toolgroups.CheckName(group); err != nil {
			httperr.WriteErr(rw, UnknownGroup(name, group))
			return
		}
	}
	if err := groupAllowed(id, name, group); err != nil {
		httperr.WriteErr(rw, err)
		return
	}
	ws, err := w.get(r.Context(), name)
	if err != nil {
		httperr.WriteErr(rw, err)
		return
	}
	serve := ws.all
	switch client := r.PathValue("client"); {
	case client != "":
		serve, err = w.server(ws, client)
	case group != "":
		serve, err = w.group(ws, group)
	}
	if err != nil {
		httperr.WriteErr(rw, err)
		return
	}
	r.Header = r.Header.Clone()
	if rw, err = unbindSession(rw, r, id); err != nil {
		httperr.WriteErr(w0, err)
		return
	}
	r.Header.Set(callerHeader, string(id.Grade)+" "+id.Name)
	r.Header.Del(workspacesHeader)
	if id.Workspaces != nil {
		r.Header.Set(workspacesHeader, id.Workspaces.String())
	}
	release := func() {}
	if body, ok := readBody(r); ok {
		if w.opts.tasks && serve.view.serveTasks(rw, r, body, id) {
			return
		}
		if !w.http.SDKOnly && serve.view.serveCall(rw, r, body) {
			return
		}
		rw, release = olderEra(rw, r, body)
	}
	unbound(rw)
	serve.ServeHTTP(rw, r)
	release()
}

// unbound lifts the server's write timeout for an MCP request: its
// response is an event stream that lasts as long as a tool call (or, for a
// session's GET and a subscriptions/listen, as long as the client listens),
// where the gateway's timeouts are made for short replies. The read timeout
// needs nothing: it bounds reading the request, and the server lifts it
// itself once the body has been read.
func unbound(rw http.ResponseWriter) {
	_ = http.NewResponseController(rw).SetWriteDeadline(time.Time{})
}

// callerFromHeader is Options.As over HTTP: the identity ServeHTTP put in
// the request's callerHeader (and its workspaces, in workspacesHeader),
// asserted on the outgoing call (the gateway acts on its caller's behalf,
// as on every route).
func callerFromHeader(ctx context.Context, req mcp.Request) (context.Context, error) {
	extra := req.GetExtra()
	if extra == nil || len(extra.Header.Values(callerHeader)) != 1 || len(extra.Header.Values(workspacesHeader)) > 1 {
		return nil, errors.New("this call carries no caller identity; the MCP endpoint serves identified callers only")
	}
	grade, name, _ := strings.Cut(extra.Header.Get(callerHeader), " ")
	g, err := identity.ParseGrade(grade)
	if err != nil {
		return nil, err
	}
	if err := identity.CheckName(name); err != nil {
		return nil, err
	}
	id := identity.Identity{Name: name, Grade: g}
	if vs := extra.Header.Values(workspacesHeader); len(vs) == 1 {
		ws, err := identity.ParseWorkspaceList(vs[0])
		if err != nil {
			return nil, err
		}
		id.Workspaces = &ws
	}
	return identity.As(ctx, id), nil
}
