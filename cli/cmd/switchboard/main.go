// Command switchboard is the suite's one binary: `switchboard dev` runs
// everything in one process, `switchboard <service>` runs one service, and
// the other commands talk to a running suite. `switchboard help` lists them.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/switchboard-run/switchboard/cli/internal/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := app.Main(ctx, os.Args[1:], app.IO{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
	stop()
	os.Exit(code)
}
