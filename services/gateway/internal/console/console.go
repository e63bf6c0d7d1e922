// Package console is the operators' web console (docs/console.md): pages
// of workspaces, clients, tools, changed tools (pins), bridge servers,
// tokens and the audit trail, a form to try a tool, live updates over Server-Sent Events. It is served by the gateway
// on its own listener, behind the same Host/Origin guard and identity
// middleware as the API, and it makes every RPC as the signed-in caller
// (identity.As), never as the gateway: what the API refuses a caller, the
// console refuses with the same sentence.
//
// The page itself is a shell that holds no data: a browser's navigation
// cannot send the Switchboard-Identity or Authorization header, so the
// shell's script asks for each fragment with fetch, sending the identity
// (dev mode) or the API token the operator typed, kept in sessionStorage.
// Fragments are HTML rendered here with html/template.
package console

import (
	"net/http"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
)

// Prefix is where the console is served.
const Prefix = "/console/"

// Console serves the console's shell, assets and fragments.
type Console struct {
	// Registry, Mailbox and Bridge are the backends, called on behalf of
	// the caller of each request.
	Registry registryv1.RegistryServiceClient
	Audit    registryv1.AuditServiceClient
	Mailbox  mailboxv1.MailboxServiceClient
	Bridge   bridgev1.BridgeServiceClient
	// Dev says the gateway takes the Switchboard-Identity header: the
	// sign-in form asks for a name instead of a token.
	Dev bool

	// serverBeat beats after each mount and unmount made here.
	serverBeat pulse
}

// Handler is every console route. authed wraps the routes that need an
// identity (the gateway's identity middleware); the shell and its assets
// need none, since they carry no data.
func (c *Console) Handler(authed func(http.Handler) http.Handler) http.Handler {
	api := http.NewServeMux()
	for _, r := range c.apiRoutes() {
		api.HandleFunc(r.pattern, r.h)
	}
	api.HandleFunc("/console/api/", notFound)

	mux := http.NewServeMux()
	mux.HandleFunc(shellPattern, c.shell)
	mux.Handle(staticPattern, static())
	mux.Handle("/console/api/", authed(api))
	mux.HandleFunc("/console/", notFound)
	return secured(mux)
}

// The page and its assets, which need no identity.
const (
	shellPattern  = "GET /console/{$}"
	staticPattern = "GET /console/static/"
)

// route is one of the console's API routes.
type route struct {
	pattern string
	h       http.HandlerFunc
}

// apiRoutes are the routes that act as the signed-in caller.
func (c *Console) apiRoutes() []route {
	return []route{
		{"GET /console/api/whoami", c.whoami},
		{"GET /console/api/workspaces", page("workspaces", c.workspaces)},
		{"GET /console/api/workspaces/{workspace}", page("workspace", c.workspace)},
		{"GET /console/api/workspaces/{workspace}/live", c.workspaceLive},
		{"GET /console/api/workspaces/{workspace}/pins", page("pins", c.pinsPage)},
		{"POST /console/api/workspaces/{workspace}/pins/{name}/{decision}", action("pins", c.decidePin)},
		{"GET /console/api/tools/{name}", page("tool", c.tool)},
		{"POST /console/api/tools/{name}/invoke", action("posted", c.invoke)},
		{"GET /console/api/invocations", c.invocations},
		{"GET /console/api/invocations/live", c.invocationsLive},
		{"GET /console/api/invocations/{invocation}/live", c.captureLive},
		{"GET /console/api/servers", page("servers", c.servers)},
		{"GET /console/api/servers/live", c.serversLive},
		{"POST /console/api/servers", action("server-list", c.mount)},
		{"POST /console/api/servers/{client}/unmount", action("server-list", c.unmount)},
		{"GET /console/api/audit", page("audit", c.auditPage)},
		{"GET /console/api/tokens", page("tokens", c.tokens)},
		{"POST /console/api/tokens", action("tokens", c.createToken)},
		{"POST /console/api/tokens/{id}/revoke", action("tokens", c.revokeToken)},
	}
}

// Patterns lists every route the console serves ("METHOD /path"), so a
// test can hold the OpenAPI document to them.
func Patterns() []string {
	out := []string{shellPattern, staticPattern}
	for _, r := range (&Console{}).apiRoutes() {
		out = append(out, r.pattern)
	}
	return out
}

// secured sets the headers every console answer carries: scripts and
// styles only from the console itself (a description that smuggles markup
// past the escaping still cannot run), images and sound also as the data:
// URLs of results (media.go), no framing, no sniffing, no caching
// of fragments that hold a caller's data.
func secured(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; media-src data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// notFound answers a console path that names nothing.
func notFound(w http.ResponseWriter, r *http.Request) {
	refuse(w, http.StatusNotFound, "the console has no page "+r.URL.Path)
}
