package app

import (
	"context"
	"errors"
	"flag"
	"io"

	"github.com/switchboard-run/switchboard/cli/dev"
	"github.com/switchboard-run/switchboard/kit/suite/envflag"
	"github.com/switchboard-run/switchboard/kit/suite/ports"
	"github.com/switchboard-run/switchboard/kit/suite/process"
	"github.com/switchboard-run/switchboard/services/bridge"
	"github.com/switchboard-run/switchboard/services/gateway"
	"github.com/switchboard-run/switchboard/services/host"
	"github.com/switchboard-run/switchboard/services/mailbox"
	"github.com/switchboard-run/switchboard/services/registry"
)

// service runs one service alone, as its own cmd/<name> does.
func service(name string) func(context.Context, []string, IO) int {
	mains := map[string]func(context.Context, []string, io.Writer) error{
		"registry": registry.Main,
		"mailbox":  mailbox.Main,
		"bridge":   bridge.Main,
		"gateway":  gateway.Main,
		"host":     host.Main,
	}
	return func(ctx context.Context, args []string, std IO) int {
		if err := mains[name](ctx, args, std.Stderr); err != nil {
			return fail(std, name, err)
		}
		return 0
	}
}

// runDev: switchboard dev [--grpc A] [--http A] [--data DIR] [--mcp-config F] [--tools F] [--groups F] [--metrics-addr A] [--debug-addr A]
func runDev(ctx context.Context, args []string, std IO) int {
	fs := envflag.NewFlagSet("dev", std.Stderr)
	var o dev.Options
	fs.StringVar(&o.GRPC, "grpc", ports.SuiteAddr, "gRPC address of every service (loopback only)")
	fs.StringVar(&o.HTTP, "http", ports.GatewayAddr, "HTTP address of the gateway (loopback only)")
	fs.StringVar(&o.DataDir, "data", process.DefaultDataDir(), "directory of the suite's state (the embedded NATS server's storage) and of this run's secret, dev-secret")
	fs.StringVar(&o.MCPConfig, "mcp-config", "", "an mcpServers JSON file whose servers to mount at start")
	fs.StringVar(&o.ToolsFile, "tools", "", "a tools file to serve as a local tool host at start")
	fs.StringVar(&o.ToolsClient, "tools-client", "local", "the client name the --tools host serves as")
	fs.StringVar(&o.Groups, "groups", "", "a tool groups file (JSON, docs/mcp.md) to set at start")
	fs.DurationVar(&o.MaxTokenTTL, "max-token-ttl", registry.DefaultMaxTokenTTL, "the longest a token may work: a longer --ttl is refused")
	o.Mailbox.Register(fs)
	o.NATS.Register(fs)
	fs.StringVar(&o.NATSCerts, "nats-certs", "", "with --nats: a directory `switchboard certs suite` wrote; the registry, the mailbox and the bridge each connect as themselves, with the leaf of <dir>/<service>")
	// The log flags of every suite process; the security choice is not
	// asked for: the embedded suite is always dev mode.
	var lf process.Log
	lf.Register(fs)
	o.Observe.Register(fs)
	o.OAuth.Register(fs)
	o.Limits.Register(fs)
	if err := envflag.ParseOS(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return fail(std, "dev", usageError{err})
	}
	if o.MaxTokenTTL <= 0 {
		return fail(std, "dev", usagef("--max-token-ttl %v is not positive: a token must be able to work for some time", o.MaxTokenTTL))
	}
	log, err := lf.Logger(std.Stderr)
	if err != nil {
		return fail(std, "dev", err)
	}
	o.Log, o.Console = log, std.Stderr
	if err := dev.Run(ctx, o); err != nil {
		return fail(std, "dev", err)
	}
	return 0
}
