package mailbox

import (
	"flag"
	"time"

	"github.com/switchboard-run/switchboard/kit/ports"
	"github.com/switchboard-run/switchboard/kit/process"
)

// Defaults of the mailbox's flags.
const (
	DefaultListen   = ports.MailboxAddr
	DefaultRegistry = ports.RegistryAddr
)

// Config is the mailbox's configuration; every field has a flag with an
// environment fallback (kit/envflag).
type Config struct {
	// Listen is the gRPC listen address.
	Listen string
	// Registry is the registry's gRPC address.
	Registry string
	// Bounds bound what the mailbox holds.
	Bounds
	// Flags are dev mode or mutual TLS, and the log.
	process.Flags
}

// Register adds the mailbox's flags to fs, with their defaults.
func (c *Config) Register(fs *flag.FlagSet) {
	fs.StringVar(&c.Listen, "listen", DefaultListen, "gRPC listen address")
	fs.StringVar(&c.Registry, "registry", DefaultRegistry, "the registry's gRPC address")
	c.Bounds.Register(fs)
	c.Flags.Register(fs)
}

// Bounds bound the mailbox. `switchboard dev` takes them as flags too.
type Bounds struct {
	// TTL is how long an uncollected slot lives.
	TTL time.Duration
	// MaxQueued bounds the invocations queued for one client.
	MaxQueued int
	// MaxSlots bounds the invocations held in all.
	MaxSlots int
	// MaxCaptureBytes bounds one capture's stdout and stderr together.
	MaxCaptureBytes int
}

// Register adds the bounds' flags.
func (b *Bounds) Register(fs *flag.FlagSet) {
	fs.DurationVar(&b.TTL, "ttl", time.Hour, "how long an uncollected invocation is kept")
	fs.IntVar(&b.MaxQueued, "max-queued", 10_000, "invocations queued for one client before Invoke is refused")
	fs.IntVar(&b.MaxSlots, "max-slots", 1_000_000, "invocations held in all before Invoke is refused")
	fs.IntVar(&b.MaxCaptureBytes, "max-capture-bytes", 4<<20, "bytes of stdout and stderr one capture may hold")
}
