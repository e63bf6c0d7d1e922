package host

import (
	"errors"
	"flag"
	"time"

	"github.com/switchboard-run/switchboard/kit/suite/follower"
	"github.com/switchboard-run/switchboard/kit/suite/ports"
	"github.com/switchboard-run/switchboard/kit/suite/process"
)

// Defaults of the host's flags. A host dials the embedded suite
// (`switchboard dev`) unless told where its peers are.
const (
	DefaultRegistry    = ports.SuiteAddr
	DefaultMailbox     = ports.SuiteAddr
	DefaultDeadline    = follower.DefaultDeadline
	DefaultConcurrency = 4
	DefaultMaxOutput   = 1 << 20
	// DefaultCacheBytes bounds the captures kept to answer a redelivery
	// without running the tool again (docs/design.md §6).
	DefaultCacheBytes = 64 << 20
)

// Config is the tool host's configuration; every field has a flag with an
// environment fallback (kit/suite/envflag).
type Config struct {
	// Tools is the tools file to serve.
	Tools string
	// Client is the client name to host as in dev mode; with TLS the
	// certificate's CN is the identity.
	Client string
	// Registry and Mailbox are the peers' gRPC addresses, each one or
	// several replicas (kit/suite/grpcclient).
	Registry, Mailbox string
	// Deadline bounds one tool run (then SIGTERM, then SIGKILL); an
	// invocation's own shorter timeout bounds it instead.
	Deadline time.Duration
	// Concurrency is how many tool runs at once.
	Concurrency int
	// MaxOutput bounds the bytes of stdout and of stderr kept from one run.
	MaxOutput int
	// CacheBytes bounds the bytes of the recent captures kept; the oldest
	// is forgotten first.
	CacheBytes int
	// CwdRoots are the directories a driver may name as the cwd of a tool
	// advertised with subject_cwd (comma-separated; empty: the host's
	// working directory).
	CwdRoots string
	// Flags are dev mode or mutual TLS, and the log.
	process.Flags
	// Children keeps the host's key from its tools: --run-as,
	// --children-may-read-key.
	Children process.Children
}

// Register adds the host's flags to fs, with their defaults.
func (c *Config) Register(fs *flag.FlagSet) {
	fs.StringVar(&c.Tools, "tools", "", "the tools file: a JSON array of {name, description, input_schema, command, cwd?, subject_cwd?}")
	fs.StringVar(&c.Client, "client", "", "the client name to host as (dev mode; with TLS the certificate's CN is the identity)")
	fs.StringVar(&c.Registry, "registry", DefaultRegistry, "the registry's gRPC address; replicas: several, comma-separated, or a DNS name resolving to several")
	fs.StringVar(&c.Mailbox, "mailbox", DefaultMailbox, "the mailbox's gRPC address; replicas: several, comma-separated, or a DNS name resolving to several (the host moves to another when its replica dies)")
	fs.DurationVar(&c.Deadline, "deadline", DefaultDeadline, "how long one tool run may take before SIGTERM, then SIGKILL (exit code 124); an invocation's own shorter timeout wins")
	fs.IntVar(&c.Concurrency, "concurrency", DefaultConcurrency, "tool runs at once")
	fs.IntVar(&c.MaxOutput, "max-output", DefaultMaxOutput, "bytes of stdout and of stderr kept from one run; the rest is counted and dropped")
	fs.StringVar(&c.CwdRoots, "cwd-roots", "", "comma-separated absolute directories a driver may name as the cwd of a tool advertised with subject_cwd, each with what lies under it (default: the host's working directory; none when that is /)")
	fs.IntVar(&c.CacheBytes, "cache-bytes", DefaultCacheBytes, "bytes of recent captures kept to answer a redelivery without running the tool again; the oldest is forgotten first")
	c.Flags.Register(fs)
	c.Children.Register(fs)
}

// check refuses a configuration the host cannot run with.
func (c Config) check() error {
	if c.Tools == "" {
		return errors.New("--tools is required: the tools file to serve")
	}
	if c.Deadline <= 0 || c.Concurrency <= 0 || c.MaxOutput <= 0 || c.CacheBytes <= 0 {
		return errors.New("--deadline, --concurrency, --max-output and --cache-bytes must be positive")
	}
	return nil
}
