// Command registry runs the Switchboard registry service alone.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/switchboard-run/switchboard/services/registry"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := registry.Main(ctx, os.Args[1:], os.Stderr); err != nil {
		stop()
		fmt.Fprintln(os.Stderr, "registry:", err)
		os.Exit(1)
	}
}
