// Package gateway is the JSON gateway (docs/design.md §2, §4): HTTP+JSON for
// clients that do not speak gRPC. It serves the act endpoint (POST /v1/act)
// with the act wire shapes byte for byte, the REST routes grpc-gateway
// generates for the registry, mailbox and bridge, the OpenAPI document, a
// health check of its backends, the MCP endpoint (/mcp/{workspace},
// package mcpserve), and the process's Prometheus metrics (/metrics,
// docs/observability.md). Every route, /healthz included, refuses a Host the
// gateway does not answer to and an Origin it does not allow (package
// hostguard). Every route but /healthz, the OpenAPI documents and (in dev mode)
// /metrics needs an identity: a client certificate, a bearer token, or (dev mode) the
// Switchboard-Identity header; the gateway forwards it to the backends on
// the caller's behalf.
package gateway

import (
	"flag"
	"time"

	"github.com/switchboard-run/switchboard/kit/suite/ports"
	"github.com/switchboard-run/switchboard/kit/suite/process"
	"github.com/switchboard-run/switchboard/kit/suite/telemetry"
	"github.com/switchboard-run/switchboard/services/gateway/mcpserve"
)

// Config is the gateway's configuration; every field but ShutdownGrace has
// a flag with an environment fallback (kit/suite/envflag).
type Config struct {
	// Listen is the HTTP(S) address to serve on.
	Listen string
	// Registry, Mailbox and Bridge are the backends' gRPC addresses.
	Registry, Mailbox, Bridge string
	// Flags are dev mode or mutual TLS, and the log. In production the one
	// certificate serves HTTPS to callers and is the gateway's service
	// identity toward the backends.
	process.Flags
	// ShutdownGrace bounds the graceful shutdown before open connections are
	// closed (0: 35 s, enough for a held invocations read to end).
	ShutdownGrace time.Duration
	// HTTPHosts lists (comma-separated) the Host names every route answers
	// to besides the loopback names and the listen host; HTTPOrigins the
	// origins whose web pages may call it (docs/security.md).
	HTTPHosts, HTTPOrigins string
	// TokenRecheck is how often a bearer token is checked again while its
	// request streams (0: DefaultTokenRecheck).
	TokenRecheck time.Duration
	// MCPCallTimeout bounds an MCP tools/call (0: mcpserve.DefaultCallTimeout).
	MCPCallTimeout time.Duration
	// MCPSessionTimeout closes an MCP session no request touched for this
	// long (0: never).
	MCPSessionTimeout time.Duration
	// MCPSDKOnly serves every MCP request through the SDK's handler, a
	// plain tools/call of the stateless era included (mcpserve.HTTPOptions.SDKOnly):
	// tests compare the endpoint's own answers with the SDK's. No flag sets it.
	MCPSDKOnly bool
	// OAuth makes the MCP endpoint an OAuth resource server when its
	// issuers are named (docs/security.md).
	OAuth OAuthFlags
	// Limits are the per-caller limits on the call routes.
	Limits LimitFlags
	// Telemetry counts and traces every request and serves /metrics (nil:
	// a registry of the gateway's own, no tracing). Not a flag: Main passes
	// the process's.
	Telemetry *telemetry.Telemetry
}

// Defaults for the flags.
const (
	DefaultListen   = ports.GatewayAddr
	DefaultRegistry = ports.RegistryAddr
	DefaultMailbox  = ports.MailboxAddr
	DefaultBridge   = ports.BridgeAddr
	// DefaultMCPSessionTimeout closes sessions their clients forgot.
	DefaultMCPSessionTimeout = 30 * time.Minute
)

// Register adds the gateway's flags to fs (each with its SWITCHBOARD_*
// environment fallback when parsed with kit/suite/envflag).
func (c *Config) Register(fs *flag.FlagSet) {
	fs.StringVar(&c.Listen, "listen", DefaultListen, "HTTP address to serve on (loopback only in dev mode)")
	fs.StringVar(&c.Registry, "registry", DefaultRegistry, "gRPC address of the registry; replicas: several, comma-separated, or a DNS name resolving to several")
	fs.StringVar(&c.Mailbox, "mailbox", DefaultMailbox, "gRPC address of the mailbox; replicas: several, comma-separated, or a DNS name resolving to several")
	fs.StringVar(&c.Bridge, "bridge", DefaultBridge, "gRPC address of the bridge; replicas: several, comma-separated, or a DNS name resolving to several")
	fs.StringVar(&c.HTTPHosts, "http-hosts", "",
		"comma-separated Host names every route answers to besides localhost, 127.0.0.1, ::1 and the listen host (loopback names only in dev mode); any other Host is refused")
	fs.StringVar(&c.HTTPOrigins, "http-origins", "",
		"comma-separated origins (https://app.example.com) whose web pages may call the gateway; a request with another Origin is refused")
	fs.DurationVar(&c.MCPCallTimeout, "mcp-call-timeout", mcpserve.DefaultCallTimeout,
		"how long an MCP tools/call waits for its capture before answering with the invocation handle")
	fs.DurationVar(&c.MCPSessionTimeout, "mcp-session-timeout", DefaultMCPSessionTimeout,
		"close an MCP session no request touched for this long (0: never)")
	c.OAuth.Register(fs)
	c.Limits.Register(fs)
	c.Flags.Register(fs)
}
