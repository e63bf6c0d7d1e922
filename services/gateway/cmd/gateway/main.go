// Command gateway runs the gateway alone; `switchboard gateway` is the same.
package main

import (
	"github.com/switchboard-run/switchboard/kit/config"
	"github.com/switchboard-run/switchboard/services/gateway"
)

func main() { config.Main("gateway", gateway.Main) }
