package bridge

import (
	"flag"
	"time"

	"github.com/switchboard-run/switchboard/kit/suite/natsconn"
	"github.com/switchboard-run/switchboard/kit/suite/ports"
	"github.com/switchboard-run/switchboard/kit/suite/process"
	"github.com/switchboard-run/switchboard/kit/suite/telemetry"
	"github.com/switchboard-run/switchboard/services/bridge/internal/supervise"
)

// Defaults of the bridge process.
const (
	DefaultListen   = ports.BridgeAddr
	DefaultRegistry = ports.RegistryAddr
	DefaultMailbox  = ports.MailboxAddr
	// DefaultMaxInFlight bounds concurrent calls to one server (docs/design.md §5).
	DefaultMaxInFlight = 8
)

// Config is the bridge's configuration, from flags with SWITCHBOARD_* env
// fallbacks (kit/suite/envflag).
type Config struct {
	// Listen is the gRPC listen address.
	Listen string
	// Registry and Mailbox are the peers' gRPC addresses.
	Registry, Mailbox string
	// MCPConfig is an mcpServers JSON file whose servers are mounted (stored,
	// unless stored already as they are) at start; empty mounts nothing.
	MCPConfig string
	// NATS is where the mounts are stored and the exclusive mounts' leases
	// are kept.
	NATS natsconn.Config
	// Replica names this replica in the store and in ListServers; empty:
	// bridge-<host>-<pid>.
	Replica string
	// Flags are dev mode or mutual TLS, and the log.
	process.Flags
	// Children keeps the bridge's key from the servers and backends it
	// runs: --run-as, --children-may-read-key (Main only).
	Children process.Children

	// Telemetry is where the bridge's metrics are registered (nil: a
	// registry of its own). Not a flag: Main passes the process's.
	Telemetry *telemetry.Telemetry

	// timing is for tests: supervision and open bounds, zero = defaults.
	timing timing
}

// timing holds the durations tests shorten; production uses the defaults.
type timing struct {
	backoff, maxBackoff, stable time.Duration
	// open bounds starting a server and listing its tools.
	open time.Duration
	// firstStart bounds how long Mount waits for the first start to settle.
	firstStart time.Duration
}

func (t timing) withDefaults() timing {
	if t.backoff == 0 {
		t.backoff = supervise.DefaultBackoff
	}
	if t.maxBackoff == 0 {
		t.maxBackoff = supervise.DefaultMaxBackoff
	}
	if t.stable == 0 {
		t.stable = supervise.DefaultStable
	}
	if t.open == 0 {
		t.open = 30 * time.Second
	}
	if t.firstStart == 0 {
		t.firstStart = 30 * time.Second
	}
	return t
}

// Register adds the bridge's flags to fs.
func (c *Config) Register(fs *flag.FlagSet) {
	fs.StringVar(&c.Listen, "listen", DefaultListen, "gRPC listen address")
	fs.StringVar(&c.Registry, "registry", DefaultRegistry, "the registry's gRPC address; replicas: several, comma-separated, or a DNS name resolving to several")
	fs.StringVar(&c.Mailbox, "mailbox", DefaultMailbox, "the mailbox's gRPC address; replicas: several, comma-separated, or a DNS name resolving to several")
	fs.StringVar(&c.MCPConfig, "mcp-config", "", `an mcpServers JSON file ({"mcpServers":{"<client>":{...}}}) whose servers are mounted at start`)
	fs.StringVar(&c.Replica, "replica", "", "this replica's name, shown by `switchboard mcp ls` (default bridge-<host>-<pid>)")
	c.NATS.Register(fs)
	c.Flags.Register(fs)
	c.Children.Register(fs)
}
