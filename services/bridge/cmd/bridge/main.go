// Command bridge runs the bridge alone; `switchboard bridge` is the same.
package main

import (
	"github.com/switchboard-run/switchboard/kit/config"
	"github.com/switchboard-run/switchboard/services/bridge"
)

func main() { config.Main("bridge", bridge.Main) }
