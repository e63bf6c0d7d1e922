// Package process is what every suite process shares: the flags that say
// how it proves who it is and how it logs (Flags), the preamble of each
// service's Main (Start) and what it returns (Running: the logger, and the
// one way to listen, serve gRPC and dial peers), and the runner behind each
// cmd/<name> (Main).
//
// A service's shape: a Config struct embedding Flags, whose
// Register(*flag.FlagSet) adds every flag of the service (listen address,
// peers' addresses, bounds) and then the embedded Flags; a
// Main(ctx, args, stderr) that begins with Start.
package process

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/switchboard-run/switchboard/kit/lib/logging"
	"github.com/switchboard-run/switchboard/kit/suite/envflag"
	"github.com/switchboard-run/switchboard/kit/suite/telemetry"
)

// Log is how a process logs: --log-level and --log-format.
type Log struct {
	LogLevel  string
	LogFormat string
}

// Register adds --log-level and --log-format.
func (l *Log) Register(fs *flag.FlagSet) {
	fs.StringVar(&l.LogLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&l.LogFormat, "log-format", "text", "log format: text or json")
}

// Logger returns the logger the flags name, writing to w.
func (l *Log) Logger(w io.Writer) (*slog.Logger, error) {
	return logging.New(w, l.LogLevel, l.LogFormat)
}

// Flags are what every suite process's flags share: how it proves who it
// is, and how it logs. A service's Config embeds them.
type Flags struct {
	Security Security
	Log
	Observe
}

// Register adds the security flags, --log-level, --log-format,
// --metrics-addr and --debug-addr.
func (f *Flags) Register(fs *flag.FlagSet) {
	f.Security.Register(fs)
	f.Log.Register(fs)
	f.Observe.Register(fs)
}

// processFlags lets Start reach the Flags a Config embeds.
func (f *Flags) processFlags() *Flags { return f }

// Config is a service's configuration: Register adds every one of its flags,
// and it embeds Flags (which only a type embedding them can satisfy).
type Config interface {
	Register(fs *flag.FlagSet)
	processFlags() *Flags
}

// Start is the preamble of every service's Main: it registers cfg's flags
// on a flag set named for the command, parses args with their environment
// fallbacks, checks the security choice and returns the running process,
// whose logger writes to stderr, whose telemetry is what the OTEL_*
// environment asks for, and whose metrics and debug listeners are open.
// Main defers the running process's Close. -h answers flag.ErrHelp, which Main and
// the switchboard command exit 0 on.
func Start(name string, cfg Config, args []string, stderr io.Writer) (*Running, error) {
	fs := envflag.NewFlagSet(name, stderr)
	cfg.Register(fs)
	if err := envflag.ParseOS(fs, args); err != nil {
		return nil, err
	}
	f := cfg.processFlags()
	if err := f.Security.Check(); err != nil {
		return nil, err
	}
	log, err := f.Logger(stderr)
	if err != nil {
		return nil, err
	}
	tel, err := telemetry.New(context.Background(), "switchboard-"+name)
	if err != nil {
		return nil, err
	}
	r := newRunning(name, log, &f.Security)
	r.Telemetry, r.metricsKey = tel, f.Observe.MetricsKey
	if r.Observing, err = f.Observe.Open(log, tel, f.Security.Dev, r.ServerTLS); err != nil {
		tel.Shutdown(context.Background())
		return nil, err
	}
	return r, nil
}

// Main runs a process's Main as a command (cmd/<name>): SIGINT and SIGTERM
// end its context, an error is printed after the name with exit code 1,
// and -h exits 0.
func Main(name string, run func(ctx context.Context, args []string, stderr io.Writer) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stderr)
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}
