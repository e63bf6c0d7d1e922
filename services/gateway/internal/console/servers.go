package console

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
)

// serverRow is one mounted server, its state named for reading.
type serverRow struct {
	*bridgev1.ServerStatus
	State string
}

// serversView is the bridge's servers and, after a mount or an unmount,
// what was done.
type serversView struct {
	Servers []serverRow
	Done    string
}

// servers lists the bridge's servers as the caller.
func (c *Console) servers(ctx context.Context, _ *http.Request) (any, error) {
	return c.readServers(ctx)
}

func (c *Console) readServers(ctx context.Context) (serversView, error) {
	res, err := c.Bridge.ListServers(ctx, &bridgev1.ListServersRequest{})
	if err != nil {
		return serversView{}, err
	}
	var v serversView
	for _, s := range res.GetServers() {
		v.Servers = append(v.Servers, serverRow{ServerStatus: s, State: stateName(s.GetState())})
	}
	return v, nil
}

// stateName is "running" for STATE_RUNNING.
func stateName(s bridgev1.State) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "STATE_"))
}

// serversLive re-renders the server list whenever the registry reports a
// change: a server reaching running advertises its tools and opens its
// read, one crashing closes it, so the registry's watch is the bridge's
// pulse without a poll. (The bridge has no watch of its own.) A mount or
// unmount made from this console draws it again once the bridge answered,
// since the registry may hear of a server before the bridge's state moves.
func (c *Console) serversLive(w http.ResponseWriter, r *http.Request) {
	beats, stop := c.serverBeat.subscribe()
	defer stop()
	c.follow(w, r, &registryv1.WatchToolsRequest{}, beats, func(ctx context.Context, ev *events) error {
		v, err := c.readServers(ctx)
		if err != nil {
			return err
		}
		return ev.render("server-list", "server-list", v)
	})
}

// mount mounts a stdio MCP server, or an HTTP API from its OpenAPI
// document (kind "openapi"), as the caller (the bridge admits admins only)
// and, when the form names a workspace, registers its client there, so its
// tools are listed.
func (c *Console) mount(ctx context.Context, _ *http.Request, f url.Values) (any, error) {
	client := strings.TrimSpace(f.Get("client"))
	cfg := &bridgev1.ServerConfig{}
	switch kind := f.Get("kind"); kind {
	case "", "stdio":
		cfg.Transport = &bridgev1.ServerConfig_Stdio{Stdio: &bridgev1.StdioTransport{Command: strings.TrimSpace(f.Get("command")), Args: lines(f.Get("args"))}}
	case "openapi":
		api := &bridgev1.OpenApiTransport{SpecUrl: strings.TrimSpace(f.Get("spec_url")), BaseUrl: strings.TrimSpace(f.Get("base_url")),
			Include: splitList(f.Get("include")), Exclude: splitList(f.Get("exclude"))}
		if tok := strings.TrimSpace(f.Get("bearer_token")); tok != "" {
			api.Auth = &bridgev1.OpenApiAuth{BearerToken: tok}
		}
		cfg.Transport = &bridgev1.ServerConfig_Openapi{Openapi: api}
	default:
		return nil, badForm("kind %q is not a kind of mount the console makes: stdio or openapi", kind)
	}
	if _, err := c.Bridge.Mount(ctx, &bridgev1.MountRequest{Client: client, Config: cfg}); err != nil {
		return nil, err
	}
	c.serverBeat.beat()
	done := "mounted " + quote(client)
	if ws := strings.TrimSpace(f.Get("workspace")); ws != "" {
		if _, err := c.Registry.RegisterClient(ctx, &registryv1.RegisterClientRequest{Workspace: ws, Client: client}); err != nil {
			return nil, err
		}
		done += " in workspace " + quote(ws)
	}
	return c.doneServers(ctx, done)
}

// unmount unmounts a server as the caller.
func (c *Console) unmount(ctx context.Context, r *http.Request, _ url.Values) (any, error) {
	client := r.PathValue("client")
	if _, err := c.Bridge.Unmount(ctx, &bridgev1.UnmountRequest{Client: client}); err != nil {
		return nil, err
	}
	c.serverBeat.beat()
	return c.doneServers(ctx, "unmounted "+quote(client))
}

// doneServers is the server list after an action, saying what was done.
func (c *Console) doneServers(ctx context.Context, done string) (serversView, error) {
	v, err := c.readServers(ctx)
	v.Done = done
	return v, err
}

// lines splits a text area into its non-empty lines, one argument each.
func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimRight(l, "\r"); strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

func quote(s string) string { return strconv.Quote(s) }
