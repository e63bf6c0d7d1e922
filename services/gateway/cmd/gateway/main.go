// Command gateway runs the gateway alone; `switchboard gateway` is the same.
package main

import (
	"github.com/switchboard-run/switchboard/kit/suite/process"
	"github.com/switchboard-run/switchboard/services/gateway"
)

func main() { process.Main("gateway", gateway.Main) }
