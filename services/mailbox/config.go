package mailbox

import (
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/switchboard-run/switchboard/kit/suite/grpcserver"
	"github.com/switchboard-run/switchboard/kit/suite/natsconn"
	"github.com/switchboard-run/switchboard/kit/suite/ports"
	"github.com/switchboard-run/switchboard/kit/suite/presence"
	"github.com/switchboard-run/switchboard/kit/suite/process"
	"github.com/switchboard-run/switchboard/kit/suite/telemetry"
)

// Defaults of the mailbox's flags.
const (
	DefaultListen   = ports.MailboxAddr
	DefaultRegistry = ports.RegistryAddr
)

// Config is the mailbox's configuration; every field has a flag with an
// environment fallback (kit/suite/envflag).
type Config struct {
	// Listen is the gRPC listen address.
	Listen string
	// Registry is the registry's gRPC address.
	Registry string
	// Bounds bound what the mailbox holds.
	Bounds
	// NATS is where the state lives (durable invocations, presence).
	NATS natsconn.Config
	// Flags are dev mode or mutual TLS, and the log.
	process.Flags
	// Telemetry is where the mailbox's metrics are registered (nil: a
	// registry of its own). Not a flag: Main passes the process's.
	Telemetry *telemetry.Telemetry
}

// Register adds the mailbox's flags to fs, with their defaults.
func (c *Config) Register(fs *flag.FlagSet) {
	fs.StringVar(&c.Listen, "listen", DefaultListen, "gRPC listen address")
	fs.StringVar(&c.Registry, "registry", DefaultRegistry, "the registry's gRPC address; replicas: several, comma-separated, or a DNS name resolving to several")
	c.Bounds.Register(fs)
	c.NATS.Register(fs)
	c.Flags.Register(fs)
}

// DefaultMaxInputBytes bounds an input: well under the 16 MiB message
// limit, so a queue holds many, and a model's tool call is far smaller.
const DefaultMaxInputBytes = 1 << 20

// withDefaults fills what zero bounds leave out with the flags' defaults.
func (b Bounds) withDefaults() Bounds {
	if b.MaxInputBytes == 0 {
		b.MaxInputBytes = DefaultMaxInputBytes
	}
	if b.PresenceTTL == 0 {
		b.PresenceTTL = presence.DefaultTTL
	}
	for _, d := range []struct {
		v   *int64
		def int64
	}{{&b.MaxHeldBytes, DefaultMaxHeldBytes}, {&b.MaxPosterBytes, DefaultMaxPosterBytes}, {&b.MaxClientBytes, DefaultMaxClientBytes}} {
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	for _, d := range []struct {
		v   *int
		def int
	}{{&b.MaxReadBytes, DefaultMaxReadBytes}, {&b.MaxReadRows, DefaultMaxReadRows}, {&b.MaxCancelReason, DefaultMaxCancelReason},
		{&b.MaxIdempotencyKeys, DefaultMaxIdempotencyKeys}} {
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	return b
}

// Bounds bound the mailbox. `switchboard dev` takes them as flags too.
type Bounds struct {
	// TTL is how long an uncollected slot lives.
	TTL time.Duration
	// MaxQueued bounds the invocations queued for one client.
	MaxQueued int
	// MaxSlots bounds the invocations held in all.
	MaxSlots int
	// MaxCaptureBytes bounds one capture's stdout, stderr and MCP result together.
	MaxCaptureBytes int
	// MaxInputBytes bounds one invocation's input.
	MaxInputBytes int
	// PresenceTTL is how long this replica's hosts stay present after it
	// stops answering (its heartbeat's TTL).
	PresenceTTL time.Duration
	// MaxQueueBytes bounds the bytes of every durable invocation together
	// (0 is no bound).
	MaxQueueBytes int64
	// MaxHeldBytes bounds what every invocation holds together, from
	// Invoke until its capture is collected (package budget), on this
	// replica.
	MaxHeldBytes int64
	// MaxPosterBytes bounds what one driver's invocations hold.
	MaxPosterBytes int64
	// MaxClientBytes bounds what the invocations addressed to one client
	// hold.
	MaxClientBytes int64
	// MaxReadBytes bounds one read's batch: an Invocations response, or
	// what a Follow stream takes at once.
	MaxReadBytes int
	// MaxReadRows bounds the invocations of one read's batch.
	MaxReadRows int
	// MaxCancelReason bounds a cancel's reason, which becomes the
	// capture's stderr.
	MaxCancelReason int
	// MaxIdempotencyKeys bounds the new idempotency keys one driver may
	// use on this replica within one --ttl.
	MaxIdempotencyKeys int
}

// Register adds the bounds' flags.
func (b *Bounds) Register(fs *flag.FlagSet) {
	fs.DurationVar(&b.TTL, "ttl", time.Hour, "how long an uncollected invocation is kept")
	fs.IntVar(&b.MaxQueued, "max-queued", 10_000, "invocations queued for one client before Invoke is refused")
	fs.IntVar(&b.MaxSlots, "max-slots", 1_000_000, "invocations one replica holds in memory, and the durable ones in all, before Invoke is refused")
	fs.IntVar(&b.MaxCaptureBytes, "max-capture-bytes", 4<<20, "bytes of stdout, stderr and MCP result one capture may hold")
	fs.DurationVar(&b.PresenceTTL, "presence-ttl", presence.DefaultTTL, "how long a host stays present after its mailbox replica stops answering")
	fs.IntVar(&b.MaxInputBytes, "max-input-bytes", DefaultMaxInputBytes, "bytes one invocation's input may hold")
	fs.Int64Var(&b.MaxQueueBytes, "max-queue-bytes", 1<<30, "bytes of durable invocations (Invoke, Tasks, the backlog) in all before Invoke is refused")
	fs.Int64Var(&b.MaxHeldBytes, "max-held-bytes", DefaultMaxHeldBytes, "bytes of invocations (input, tool, cwd) and uncollected captures this replica holds in all before Invoke is refused")
	fs.Int64Var(&b.MaxPosterBytes, "max-poster-bytes", DefaultMaxPosterBytes, "bytes of invocations and uncollected captures one driver may hold before its Invoke is refused")
	fs.Int64Var(&b.MaxClientBytes, "max-client-bytes", DefaultMaxClientBytes, "bytes of invocations and uncollected captures addressed to one client before Invoke to it is refused")
	fs.IntVar(&b.MaxReadBytes, "max-read-bytes", DefaultMaxReadBytes, "bytes of invocations one read hands out at once (an Invocations response); more wait for the next read")
	fs.IntVar(&b.MaxReadRows, "max-read-rows", DefaultMaxReadRows, "invocations one read hands out at once; more wait for the next read")
	fs.IntVar(&b.MaxCancelReason, "max-cancel-reason", DefaultMaxCancelReason, "bytes a cancel's reason may hold")
	fs.IntVar(&b.MaxIdempotencyKeys, "max-idempotency-keys", DefaultMaxIdempotencyKeys, "new idempotency keys one driver may use on this replica within one --ttl")
}

// Defaults of the byte budgets and the read batches (docs/security.md).
// One poster holds at most a quarter of a client's budget and a sixteenth
// of the replica's, so a single driver can neither fill a client for the
// others nor, with a few more, the replica.
const (
	DefaultMaxHeldBytes    = 1 << 30
	DefaultMaxPosterBytes  = 64 << 20
	DefaultMaxClientBytes  = 256 << 20
	DefaultMaxReadBytes    = 4 << 20
	DefaultMaxReadRows     = 256
	DefaultMaxCancelReason = 1024
	// Ten thousand keys an hour is a call every 360 ms, each retryable.
	DefaultMaxIdempotencyKeys = 10_000
)

// maxCwdBytes bounds an invocation's cwd: a path, at most PATH_MAX.
const maxCwdBytes = 4096

// readRowHeadroom is what a row adds to its input, tool and cwd in a read's
// response: the handle, the delivery, the fields' tags and lengths.
const readRowHeadroom = 1 << 10

// check refuses bounds under which a post could never be read or held: a
// batch must carry the largest invocation, and fit one gRPC message; every
// budget must hold one.
func (b Bounds) check() error {
	var errs []error
	if b.MaxReadBytes > grpcserver.MaxMessageBytes/2 {
		errs = append(errs, fmt.Errorf("--max-read-bytes %d is over half the %d-byte gRPC message limit", b.MaxReadBytes, grpcserver.MaxMessageBytes))
	}
	if need := b.MaxInputBytes + maxCwdBytes + readRowHeadroom; b.MaxReadBytes < need {
		errs = append(errs, fmt.Errorf("--max-read-bytes %d cannot carry one invocation at --max-input-bytes %d: raise it to %d or more", b.MaxReadBytes, b.MaxInputBytes, need))
	}
	for _, bud := range []struct {
		flag string
		n    int64
	}{{"--max-held-bytes", b.MaxHeldBytes}, {"--max-poster-bytes", b.MaxPosterBytes}, {"--max-client-bytes", b.MaxClientBytes}} {
		if bud.n < int64(b.MaxInputBytes) {
			errs = append(errs, fmt.Errorf("%s %d is below --max-input-bytes %d: no invocation at that bound could be posted", bud.flag, bud.n, b.MaxInputBytes))
		}
	}
	if b.PresenceTTL < 3*time.Second {
		errs = append(errs, fmt.Errorf("--presence-ttl %v is below 3s: the heartbeat is renewed every third of it", b.PresenceTTL))
	}
	if b.MaxReadRows < 1 {
		errs = append(errs, fmt.Errorf("--max-read-rows %d: a read hands out at least one invocation", b.MaxReadRows))
	}
	return errors.Join(errs...)
}
