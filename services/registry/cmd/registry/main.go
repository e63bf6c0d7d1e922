// Command registry runs the registry alone; `switchboard registry` is the same.
package main

import (
	"github.com/switchboard-run/switchboard/kit/config"
	"github.com/switchboard-run/switchboard/services/registry"
)

func main() { config.Main("registry", registry.Main) }
