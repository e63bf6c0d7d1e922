// Package config reads a command's flags with environment fallbacks: every
// flag --some-name may also be set as SWITCHBOARD_SOME_NAME, and a flag on
// the command line wins over the environment.
package config

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/switchboard-run/switchboard/kit/certs"
	"github.com/switchboard-run/switchboard/kit/identity"
	"github.com/switchboard-run/switchboard/kit/logging"
)

// EnvName is the environment variable that backs flag name.
func EnvName(name string) string {
	return "SWITCHBOARD_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// NewFlagSet returns a flag set that reports errors instead of exiting, with
// usage that lists the environment variable beside each flag.
func NewFlagSet(name string, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprintf(out, "usage: switchboard %s [flags]\n", name)
		fs.VisitAll(func(f *flag.Flag) {
			fmt.Fprintf(out, "  --%s (env %s)\n    \t%s", f.Name, EnvName(f.Name), f.Usage)
			if f.DefValue != "" {
				fmt.Fprintf(out, " (default %q)", f.DefValue)
			}
			fmt.Fprintln(out)
		})
	}
	return fs
}

// Parse parses args, then fills every flag not given on the command line
// from its environment variable. lookup is os.LookupEnv in production.
// Positional arguments are refused: commands that take them parse with
// FromEnv.
func Parse(fs *flag.FlagSet, args []string, lookup func(string) (string, bool)) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	err := FromEnv(fs, lookup)
	if fs.NArg() > 0 {
		err = errors.Join(err, fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	return err
}

// FromEnv fills every flag of a parsed set that was not given on the
// command line from its environment variable.
func FromEnv(fs *flag.FlagSet, lookup func(string) (string, bool)) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if given[f.Name] {
			return
		}
		if v, ok := lookup(EnvName(f.Name)); ok {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %w", EnvName(f.Name), v, err))
			}
		}
	})
	return errors.Join(errs...)
}

// ParseOS is Parse with the process environment.
func ParseOS(fs *flag.FlagSet, args []string) error { return Parse(fs, args, os.LookupEnv) }

// Security is how a process proves who it is and checks who calls it: dev
// mode (loopback, identity from metadata) or mutual TLS.
type Security struct {
	Dev   bool
	Files certs.Files
	// ServerName overrides the name checked on peers' certificates.
	ServerName string
}

// Register adds --dev, --tls-ca, --tls-cert, --tls-key and --tls-server-name.
func (s *Security) Register(fs *flag.FlagSet) {
	fs.BoolVar(&s.Dev, "dev", false, "dev mode: loopback only, identity from the switchboard-identity header; no TLS")
	fs.StringVar(&s.Files.CA, "tls-ca", "", "PEM file of the CA that signs every peer")
	fs.StringVar(&s.Files.Cert, "tls-cert", "", "PEM file of this process's certificate")
	fs.StringVar(&s.Files.Key, "tls-key", "", "PEM file of this process's key")
	fs.StringVar(&s.ServerName, "tls-server-name", "", "name to check on peers' certificates (default: the dialed host)")
}

// Check refuses a mixed or empty choice, naming what to pass.
func (s *Security) Check() error {
	switch {
	case s.Dev && !s.Files.Empty():
		return errors.New("--dev and --tls-* are exclusive: dev mode has no TLS")
	case !s.Dev && s.Files.Empty():
		return certs.ErrNoTLS
	}
	return nil
}

// TLS returns the listener's TLS config and the config for dialing peers;
// both are nil in dev mode.
func (s *Security) TLS() (server, client *tls.Config, err error) {
	if s.Dev {
		return nil, nil, nil
	}
	if server, err = s.Files.ServerConfig(); err != nil {
		return nil, nil, err
	}
	if client, err = s.Files.ClientConfig(s.ServerName); err != nil {
		return nil, nil, err
	}
	return server, client, nil
}

// Caller is how a service named name calls its peers as itself: by its
// certificate in production, by naming itself (grade service) in dev mode.
func (s *Security) Caller(name string) identity.Caller {
	return identity.Caller{Dev: s.Dev, Self: identity.Identity{Name: name, Grade: identity.Service}}
}

// Authenticator is the server side of this choice.
func (s *Security) Authenticator() identity.Authenticator {
	return identity.Authenticator{Dev: s.Dev}
}

// Process is what every suite process's flags share: how it proves who it
// is, and how it logs.
type Process struct {
	Security  Security
	LogLevel  string
	LogFormat string
}

// Register adds the security flags, --log-level and --log-format.
func (p *Process) Register(fs *flag.FlagSet) {
	p.Security.Register(fs)
	fs.StringVar(&p.LogLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&p.LogFormat, "log-format", "text", "log format: text or json")
}

// Start checks the security choice and returns the process's logger,
// writing to w.
func (p *Process) Start(w io.Writer) (*slog.Logger, error) {
	if err := p.Security.Check(); err != nil {
		return nil, err
	}
	return logging.New(w, p.LogLevel, p.LogFormat)
}

// Parse is the preamble of every process's Main: it parses args with their
// environment fallbacks, then starts the process. -h answers flag.ErrHelp,
// which Main (below) and the switchboard command exit 0 on.
func (p *Process) Parse(fs *flag.FlagSet, args []string, w io.Writer) (*slog.Logger, error) {
	if err := ParseOS(fs, args); err != nil {
		return nil, err
	}
	return p.Start(w)
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
