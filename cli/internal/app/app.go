// Package app is the `switchboard` command: the suite in one process
// (`dev`), each service alone, and the commands people use against a
// running suite.
package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// IO is where a command reads and writes.
type IO struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// command is one subcommand. run returns the process's exit code.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, std IO) int
}

func commands() map[string]command {
	return map[string]command{
		"dev":      {"run the whole suite in one process on loopback (what `make run` runs)", runDev},
		"registry": {"run the registry service alone", service("registry")},
		"mailbox":  {"run the mailbox service alone", service("mailbox")},
		"bridge":   {"run the bridge service alone", service("bridge")},
		"gateway":  {"run the HTTP gateway alone", service("gateway")},
		"host":     {"serve a tools file as a tool host", service("host")},
		"nats":     {"run a NATS server with JetStream for the suite's state (deployments without their own)", runNATS},
		"clients":  {"list a workspace's clients and their presence", runClients},
		"tools":    {"list a workspace's tools under their presented names", runTools},
		"call":     {"call a tool by its presented name and print its capture", runCall},
		"capture":  {"collect the capture of an invocation", runCapture},
		"status":   {"show where an invocation is and its progress, without collecting it", runStatus},
		"certs":    {"mint a CA and certificates for mutual TLS", runCerts},
		"mcp":      {"mount, unmount, list, import and export servers on the bridge; serve a workspace over MCP (mcp serve)", runMCP},
		"openapi":  {"mount an HTTP API from its OpenAPI 3 document on the bridge (openapi mount)", runOpenAPI},
		"tokens":   {"create, list and revoke API tokens", runTokens},
		"grants":   {"set, list and remove the workspaces a certificate identity may see", runGrants},
		"groups":   {"set, list and remove a workspace's tool groups (its MCP endpoints /mcp/<workspace>/<group>)", runGroups},
		"audit":    {"read the audit trail: who ran what, with what outcome, and every administrative act (--follow, --json); audit policy sets what it records", runAudit},
		"pins":     {"list, show, approve and reject changed tools, and set a workspace's pin policy", runPins},
		"health":   {"check a service's health (for container healthchecks)", runHealth},
	}
}

// Main runs the command named by args[0] and returns the exit code.
func Main(ctx context.Context, args []string, std IO) int {
	cmds := commands()
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(std.Stdout, cmds)
		return 0
	}
	c, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(std.Stderr, "switchboard: unknown command %q\n", args[0])
		usage(std.Stderr, cmds)
		return 2
	}
	return c.run(ctx, args[1:], std)
}

func usage(w io.Writer, cmds map[string]command) {
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintln(w, "usage: switchboard <command> [flags]  (switchboard <command> -h for its flags)")
	fmt.Fprintln(w)
	for _, n := range names {
		fmt.Fprintf(w, "  %-9s %s\n", n, cmds[n].summary)
	}
}

// fail prints err for command name and returns exit code 1 (2 for a usage
// error, 0 for -h).
func fail(std IO, name string, err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintf(std.Stderr, "switchboard %s: %s\n", name, strings.TrimSpace(err.Error()))
	var u usageError
	if errors.As(err, &u) {
		return 2
	}
	return 1
}

// usageError is a mistake in the command line itself.
type usageError struct{ error }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }
