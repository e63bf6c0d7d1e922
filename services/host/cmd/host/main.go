// Command host runs the host alone; `switchboard host` is the same.
package main

import (
	"github.com/switchboard-run/switchboard/kit/suite/process"
	"github.com/switchboard-run/switchboard/services/host"
)

func main() { process.Main("host", host.Main) }
