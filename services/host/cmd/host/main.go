// Command host runs the host alone; `switchboard host` is the same.
package main

import (
	"github.com/switchboard-run/switchboard/kit/config"
	"github.com/switchboard-run/switchboard/services/host"
)

func main() { config.Main("host", host.Main) }
