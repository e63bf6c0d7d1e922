package app

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/switchboard-run/switchboard/cli/internal/remote"
	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	"github.com/switchboard-run/switchboard/kit/suite/envflag"
	"github.com/switchboard-run/switchboard/services/bridge"
)

// runMCP: switchboard mcp mount|unmount|ls|import|export|serve
func runMCP(ctx context.Context, args []string, std IO) int {
	if len(args) == 0 {
		return fail(std, "mcp", usagef("usage: switchboard mcp mount|unmount|ls|import|export|serve"))
	}
	sub, args := args[0], args[1:]
	switch sub {
	case "serve":
		return runMCPServe(ctx, args, std)
	case "import":
		return runMCPImport(ctx, args, std)
	case "export":
		return runMCPExport(ctx, args, std)
	}
	fs := envflag.NewFlagSet("mcp "+sub, std.Stderr)
	var rf remote.Flags
	rf.Register(fs)
	var m mountFlags
	if sub == "mount" {
		m.register(fs)
	}
	pos, err := parse(fs, args)
	if err != nil {
		return fail(std, "mcp "+sub, err)
	}
	conn, ctx, done, err := rf.Open(ctx, 60*time.Second)
	if err != nil {
		return fail(std, "mcp "+sub, err)
	}
	defer done()
	bridge := bridgev1.NewBridgeServiceClient(conn.Bridge())
	switch sub {
	case "mount":
		req, err := m.request(pos)
		if err != nil {
			return fail(std, "mcp mount", err)
		}
		res, err := bridge.Mount(ctx, req)
		if err != nil {
			return fail(std, "mcp mount", rpcError(err))
		}
		printServers(std, res.GetServer())
	case "unmount":
		if len(pos) != 1 {
			return fail(std, "mcp unmount", usagef("usage: switchboard mcp unmount <client>"))
		}
		res, err := bridge.Unmount(ctx, &bridgev1.UnmountRequest{Client: pos[0]})
		if err != nil {
			return fail(std, "mcp unmount", rpcError(err))
		}
		printServers(std, res.GetServer())
	case "ls":
		res, err := bridge.ListServers(ctx, &bridgev1.ListServersRequest{})
		if err != nil {
			return fail(std, "mcp ls", rpcError(err))
		}
		printServers(std, res.GetServers()...)
	default:
		return fail(std, "mcp", usagef("unknown mcp command %q: want mount, unmount, ls, import, export or serve", sub))
	}
	return 0
}

type mountFlags struct {
	url     *string
	headers multi
	env     multi
	cwd     *string
	trust   *bool
	allow   *string
	deny    *string
	plugin  *string
	excl    *bool
}

// multi is a repeatable K=V flag.
type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

func (m *mountFlags) register(fs *flag.FlagSet) {
	m.url = fs.String("url", "", "a Streamable HTTP MCP endpoint (instead of a command after --)")
	fs.Var(&m.headers, "header", "an HTTP header K=V sent upstream (repeatable)")
	fs.Var(&m.env, "env", "an environment variable K=V for a stdio server (repeatable)")
	m.cwd = fs.String("cwd", "", "working directory of a stdio server")
	m.trust = fs.Bool("trust", false, "pass the server's tool annotations through")
	m.allow = fs.String("allow", "", "comma-separated tool names to advertise (default all)")
	m.deny = fs.String("deny", "", "comma-separated tool names never to advertise")
	m.plugin = fs.String("plugin", "", "a JSON-lines plugin backend's manifest file (instead of a command or --url)")
	m.excl = fs.Bool("exclusive", false, "run the server on one bridge replica at a time (a server that keeps state); default: on every replica")
}

const mountUsage = "usage: switchboard mcp mount <client> -- <command> [args…]  |  switchboard mcp mount <client> --url URL" +
	"  |  switchboard mcp mount <client> --plugin manifest.json"

// request builds a Mount from `<client> [-- command args…]`, `<client>
// --url URL` or `<client> --plugin manifest.json`.
func (m *mountFlags) request(pos []string) (*bridgev1.MountRequest, error) {
	cfg := &bridgev1.ServerConfig{Trust: *m.trust, Exclusive: *m.excl, AllowTools: envflag.List(*m.allow), DenyTools: envflag.List(*m.deny)}
	if *m.plugin != "" {
		if len(pos) != 1 || *m.url != "" {
			return nil, usagef(mountUsage)
		}
		if len(m.env) > 0 || len(m.headers) > 0 || *m.cwd != "" {
			return nil, usagef("--plugin takes the command, env and cwd from the manifest: --env, --cwd and --header do not apply")
		}
		man, err := pluginManifest(*m.plugin)
		if err != nil {
			return nil, err
		}
		cfg.Transport = &bridgev1.ServerConfig_Plugin{Plugin: man}
		return &bridgev1.MountRequest{Client: pos[0], Config: cfg}, nil
	}
	if len(pos) < 1 || (len(pos) == 1) == (*m.url == "") {
		return nil, usagef(mountUsage)
	}
	if *m.url != "" {
		h, err := pairs("--header", m.headers)
		if err != nil {
			return nil, err
		}
		cfg.Transport = &bridgev1.ServerConfig_Http{Http: &bridgev1.HttpTransport{Url: *m.url, Headers: h}}
	} else {
		env, err := pairs("--env", m.env)
		if err != nil {
			return nil, err
		}
		// The bridge runs the command from its own directory: a path the
		// user wrote relative to theirs is made absolute here.
		command, cwd := pos[1], *m.cwd
		if strings.ContainsRune(command, filepath.Separator) {
			if command, err = filepath.Abs(command); err != nil {
				return nil, err
			}
		}
		if cwd != "" {
			if cwd, err = filepath.Abs(cwd); err != nil {
				return nil, err
			}
		}
		cfg.Transport = &bridgev1.ServerConfig_Stdio{Stdio: &bridgev1.StdioTransport{Command: command, Args: pos[2:], Env: env, Cwd: cwd}}
	}
	return &bridgev1.MountRequest{Client: pos[0], Config: cfg}, nil
}

// pluginManifest reads a manifest file. The bridge runs the backend from
// its own directory: a relative program path (one with a slash) or cwd the
// user wrote is made absolute here, from theirs.
func pluginManifest(path string) (*bridgev1.PluginManifest, error) {
	man, err := bridge.LoadPluginManifest(path)
	if err != nil {
		return nil, err
	}
	if prog := man.Command[0]; strings.ContainsRune(prog, filepath.Separator) {
		if man.Command[0], err = filepath.Abs(prog); err != nil {
			return nil, err
		}
	}
	if man.Cwd != "" {
		if man.Cwd, err = filepath.Abs(man.Cwd); err != nil {
			return nil, err
		}
	}
	return man, nil
}

func pairs(flagName string, kvs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usagef("%s %q is not K=V", flagName, kv)
		}
		out[k] = v
	}
	return out, nil
}

func printServers(std IO, servers ...*bridgev1.ServerStatus) {
	w := tabwriter.NewWriter(std.Stdout, 0, 4, 2, ' ', 0)
	// STATE is as the replica that answered sees it (REPLICA); RUNNING ON
	// names every replica running the server now.
	fmt.Fprintln(w, "CLIENT\tTRANSPORT\tSTATE\tTOOLS\tRESTARTS\tSERVER\tPROTOCOL\tMODE\tRUNNING ON\tREPLICA\tLAST FAULT")
	for _, s := range servers {
		state := strings.ToLower(strings.TrimPrefix(s.GetState().String(), "STATE_"))
		mode := "every replica"
		if s.GetExclusive() {
			mode = "exclusive"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", s.GetClient(), s.GetTransport(), state, s.GetToolCount(),
			s.GetRestarts(), strings.TrimSpace(s.GetServerName()+" "+s.GetServerVersion()), s.GetProtocolVersion(),
			mode, strings.Join(s.GetRunningOn(), ","), s.GetReplica(), oneLine(s.GetLastFault(), 60))
	}
	w.Flush()
}
