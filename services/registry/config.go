package registry

import (
	"errors"
	"flag"
	"fmt"

	"github.com/switchboard-run/switchboard/kit/ports"
	"github.com/switchboard-run/switchboard/kit/process"
)

// Defaults of the registry's flags.
const (
	DefaultListen      = ports.RegistryAddr
	DefaultWatchBuffer = 1024
	DefaultMaxTools    = 1024
)

// Config is the registry's configuration; every field has a flag with an
// environment fallback (kit/envflag).
type Config struct {
	// Listen is the gRPC listen address.
	Listen string
	// DataDir is the directory holding registry.db. Required.
	DataDir string
	// WatchBuffer is how many events a watcher may lag before it is told to
	// resync.
	WatchBuffer int
	// MaxTools bounds one client's set.
	MaxTools int
	// Flags are dev mode or mutual TLS, and the log. Dev mode also
	// registers every client that advertises into the workspace "default".
	process.Flags
}

// Register adds the registry's flags to fs, with their defaults.
func (c *Config) Register(fs *flag.FlagSet) {
	fs.StringVar(&c.Listen, "listen", DefaultListen, "gRPC listen address")
	fs.StringVar(&c.DataDir, "data-dir", "", "directory holding registry.db (required)")
	fs.IntVar(&c.WatchBuffer, "watch-buffer", DefaultWatchBuffer, "events a watcher may lag before it is told to resync")
	fs.IntVar(&c.MaxTools, "max-tools", DefaultMaxTools, "most tools one client may advertise")
	c.Flags.Register(fs)
}

// check refuses a configuration the registry cannot run with. Listen and
// Security are checked by Main, which uses them; New needs the rest.
func (c Config) check() error {
	var errs []error
	if c.DataDir == "" {
		errs = append(errs, errors.New("--data-dir is empty: name the directory where the registry keeps registry.db"))
	}
	if c.WatchBuffer < 1 {
		errs = append(errs, fmt.Errorf("--watch-buffer %d is below 1: a watcher must be able to lag at least one event", c.WatchBuffer))
	}
	if c.MaxTools < 1 {
		errs = append(errs, fmt.Errorf("--max-tools %d is below 1: a client must be able to advertise at least one tool", c.MaxTools))
	}
	return errors.Join(errs...)
}
