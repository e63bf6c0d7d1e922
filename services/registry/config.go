package registry

import (
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"time"

	"github.com/switchboard-run/switchboard/kit/suite/natsconn"
	"github.com/switchboard-run/switchboard/kit/suite/ports"
	"github.com/switchboard-run/switchboard/kit/suite/process"
	"github.com/switchboard-run/switchboard/kit/suite/telemetry"
)

// Defaults of the registry's flags.
const (
	DefaultListen      = ports.RegistryAddr
	DefaultWatchBuffer = 1024
	DefaultMaxTools    = 1024
	// DefaultMaxTokenTTL is the longest a token may work: a token is a
	// bearer secret, and one that never expires outlives every audit of
	// who holds it.
	DefaultMaxTokenTTL = 90 * 24 * time.Hour
	// DefaultAuditRetention and DefaultAuditMaxBytes bound the audit
	// trail: the older events go first.
	DefaultAuditRetention = 30 * 24 * time.Hour
	DefaultAuditMaxBytes  = 1 << 30
)

// Config is the registry's configuration; every field has a flag with an
// environment fallback (kit/suite/envflag).
type Config struct {
	// Listen is the gRPC listen address.
	Listen string
	// NATS is where the state lives.
	NATS natsconn.Config
	// Import names a registry.db written by an earlier version (bbolt), to
	// copy into NATS once.
	Import string
	// gone holds --data-dir, which earlier versions took: it is refused
	// with a sentence rather than left unknown.
	gone string
	// WatchBuffer is how many events a watcher may lag before it is told to
	// resync.
	WatchBuffer int
	// MaxTools bounds one client's set.
	MaxTools int
	// MaxTokenTTL is the longest a token may work: a longer ttl is refused
	// at CreateToken (a token minted before the cap keeps its expiry).
	MaxTokenTTL time.Duration
	// Groups names a declarative tool groups file (kit/suite/toolgroups.File),
	// set at start: each group in it replaces the stored one of its name.
	Groups string
	// AuditRetention and AuditMaxBytes bound the audit trail
	// (docs/security.md, "Audit"); zero takes the defaults.
	AuditRetention time.Duration
	AuditMaxBytes  int64
	// Flags are dev mode or mutual TLS, and the log. Dev mode also
	// registers every client that advertises into the workspace "default".
	process.Flags
	// Telemetry is where the registry reports what it holds (nil: not
	// reported). Not a flag: Main passes the process's.
	Telemetry *telemetry.Telemetry
}

// Register adds the registry's flags to fs, with their defaults.
func (c *Config) Register(fs *flag.FlagSet) {
	fs.StringVar(&c.Listen, "listen", DefaultListen, "gRPC listen address")
	c.NATS.Register(fs)
	fs.StringVar(&c.gone, "data-dir", "", "gone: the registry keeps its state in NATS (see --nats and --import)")
	fs.StringVar(&c.Import, "import", "", "a registry.db of an earlier version to copy into NATS (once; the file is renamed registry.db.imported)")
	fs.IntVar(&c.WatchBuffer, "watch-buffer", DefaultWatchBuffer, "events a watcher may lag before it is told to resync")
	fs.IntVar(&c.MaxTools, "max-tools", DefaultMaxTools, "most tools one client may advertise")
	fs.DurationVar(&c.MaxTokenTTL, "max-token-ttl", DefaultMaxTokenTTL, "the longest a token may work: CreateToken refuses a longer --ttl")
	fs.StringVar(&c.Groups, "groups", "", "a tool groups file (JSON, docs/mcp.md) to set at start")
	fs.DurationVar(&c.AuditRetention, "audit-retention", DefaultAuditRetention, "how long the audit trail keeps an event")
	fs.Int64Var(&c.AuditMaxBytes, "audit-max-bytes", DefaultAuditMaxBytes, "the most the audit trail holds; past it the oldest events go")
	c.Flags.Register(fs)
}

// check refuses a configuration the registry cannot run with. Listen and
// Security are checked by Main, which uses them; New needs the rest.
func (c Config) check() error {
	var errs []error
	if c.gone != "" {
		errs = append(errs, fmt.Errorf("--data-dir is gone: the registry keeps its state in NATS (--nats); to bring the registry.db of an earlier version along, start once with --import %s", filepath.Join(c.gone, "registry.db")))
	}
	if c.WatchBuffer < 1 {
		errs = append(errs, fmt.Errorf("--watch-buffer %d is below 1: a watcher must be able to lag at least one event", c.WatchBuffer))
	}
	if c.MaxTokenTTL <= 0 {
		errs = append(errs, fmt.Errorf("--max-token-ttl %v is not positive: a token must be able to work for some time", c.MaxTokenTTL))
	}
	if c.AuditRetention < 0 || c.AuditMaxBytes < 0 {
		errs = append(errs, fmt.Errorf("--audit-retention %v and --audit-max-bytes %d must not be negative", c.AuditRetention, c.AuditMaxBytes))
	}
	if c.MaxTools < 1 {
		errs = append(errs, fmt.Errorf("--max-tools %d is below 1: a client must be able to advertise at least one tool", c.MaxTools))
	}
	return errors.Join(errs...)
}

// checkAlone refuses what the registry run alone cannot work without: the
// embedded suite passes its own NATS connection instead.
func (c Config) checkAlone() error {
	if c.NATS.URLs == "" {
		return errors.New("the registry keeps its state in NATS: name its servers with --nats nats://host:4222 (switchboard dev runs one in process)")
	}
	return nil
}
