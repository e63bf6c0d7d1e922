// Package envflag reads a command's flags with environment fallbacks: every
// flag --some-name may also be set as SWITCHBOARD_SOME_NAME, and a flag on
// the command line wins over the environment.
package envflag

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
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

// List reads a comma-separated flag value: its items, trimmed, the empty
// ones dropped (so "" is no item, not one empty one).
func List(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
