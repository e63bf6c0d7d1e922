package app

import (
	"flag"
	"os"

	"github.com/switchboard-run/switchboard/kit/suite/envflag"
)

// parse parses flags anywhere among the arguments (`call NAME '{}' --timeout
// 5s` as well as `call --timeout 5s NAME '{}'`), fills unset flags from the
// environment, and returns the positional arguments. "--" ends the flags.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if len(args) > 0 && len(rest) < len(args) && args[len(args)-len(rest)-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	return pos, envflag.FromEnv(fs, os.LookupEnv)
}
