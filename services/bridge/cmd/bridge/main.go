// Command bridge runs the bridge alone; `switchboard bridge` is the same.
package main

import (
	"github.com/switchboard-run/switchboard/kit/suite/process"
	"github.com/switchboard-run/switchboard/services/bridge"
)

func main() { process.Main("bridge", bridge.Main) }
