// Command mailbox runs the mailbox service alone (the split deployment);
// `switchboard mailbox` is the same.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/switchboard-run/switchboard/services/mailbox"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := mailbox.Main(ctx, os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "mailbox:", err)
		os.Exit(1)
	}
}
