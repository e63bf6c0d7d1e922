package app

import (
	"context"
	"errors"
	"io"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-run/switchboard/cli/internal/remote"
	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/lib/logging"
	"github.com/switchboard-run/switchboard/kit/suite/envflag"
	"github.com/switchboard-run/switchboard/kit/suite/names"
	"github.com/switchboard-run/switchboard/kit/suite/toolgroups"
	"github.com/switchboard-run/switchboard/services/gateway/mcpserve"
)

// runMCPServe: switchboard mcp serve [--workspace W] [--group G] [--addr …|--registry … --mailbox …] [--as NAME | --tls-*]
// speaks MCP on stdin/stdout for an agent that launches its MCP servers as
// commands, serving the workspace's tools through the suite over gRPC.
// stdout belongs to the protocol: everything else goes to stderr.
func runMCPServe(ctx context.Context, args []string, std IO) int {
	fs := envflag.NewFlagSet("mcp serve", std.Stderr)
	var rf remote.Flags
	rf.Register(fs)
	ws := fs.String("workspace", mcpserve.DefaultWorkspace, "the workspace whose tools to serve")
	group := fs.String("group", "", "serve only this tool group of the workspace (docs/mcp.md)")
	timeout := fs.Duration("call-timeout", mcpserve.DefaultCallTimeout,
		"how long a tools/call waits for its capture before answering with the invocation handle")
	readyWait := fs.Duration("ready-wait", mcpserve.DefaultReadyWait,
		"how long to wait for the suite to list the workspace's tools before giving up with the reason")
	level := fs.String("log-level", "warn", "debug, info, warn or error (logs go to stderr)")
	pos, err := parse(fs, args)
	if err != nil {
		return fail(std, "mcp serve", err)
	}
	if len(pos) != 0 {
		return fail(std, "mcp serve", usagef("usage: switchboard mcp serve [--workspace W] [--group G] [--addr HOST:PORT] [--as NAME | --tls-ca F --tls-cert F --tls-key F]"))
	}
	if err := names.CheckWorkspace(*ws); err != nil {
		return fail(std, "mcp serve", usagef("--workspace: %v", err))
	}
	if *group != "" {
		if err := toolgroups.CheckName(*group); err != nil {
			return fail(std, "mcp serve", usagef("--group: %v", err))
		}
	}
	log, err := logging.New(std.Stderr, *level, "text")
	if err != nil {
		return fail(std, "mcp serve", usageError{err})
	}
	conn, err := rf.Dial()
	if err != nil {
		return fail(std, "mcp serve", err)
	}
	defer conn.Close()
	opts := mcpserve.Options{
		Registry: registryv1.NewRegistryServiceClient(conn.Registry()),
		Mailbox:  conn.Mailbox(),
		Bridge:   bridgev1.NewBridgeServiceClient(conn.Bridge()),
		// One person runs this command for one agent: the mirror and every
		// call act as the identity of the flags.
		Self:        conn.Ctx,
		As:          func(ctx context.Context, _ mcp.Request) (context.Context, error) { return conn.Ctx(ctx), nil },
		CallTimeout: *timeout,
		ReadyWait:   *readyWait,
		Log:         log,
	}
	t := &mcp.IOTransport{Reader: io.NopCloser(std.Stdin), Writer: nopWriteCloser{std.Stdout}}
	if err := mcpserve.Serve(ctx, t, *ws, *group, opts); err != nil && !errors.Is(err, context.Canceled) {
		return fail(std, "mcp serve", err)
	}
	return 0
}

// nopWriteCloser leaves stdout open when the session ends.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
