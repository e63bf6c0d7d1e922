package mcpserve

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Serve serves workspace ws's tools (or, when group is set, the tools of
// that group of it) to one MCP client over t (stdin and
// stdout for `switchboard mcp serve`) until the client ends the session or
// ctx ends. It fails at once, with the reason, when the suite does not list
// the workspace's tools within opts.ReadyWait: a desktop agent shows that
// sentence, where a server that started and hung would show nothing.
func Serve(ctx context.Context, t mcp.Transport, ws, group string, opts Options) error {
	m, err := NewMirror(ws, opts)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m.Start(ctx)
	defer m.Close()
	if err := m.WaitReady(ctx); err != nil {
		return err
	}
	server := m.Server()
	if group != "" {
		if server, err = m.Group(group); err != nil {
			return err
		}
	}
	return server.Run(ctx, t)
}
