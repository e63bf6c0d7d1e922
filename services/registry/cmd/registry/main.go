// Command registry runs the registry alone; `switchboard registry` is the same.
package main

import (
	"github.com/switchboard-run/switchboard/kit/suite/process"
	"github.com/switchboard-run/switchboard/services/registry"
)

func main() { process.Main("registry", registry.Main) }
