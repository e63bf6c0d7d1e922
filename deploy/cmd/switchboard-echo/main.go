// Command switchboard-echo is the example tool host's tool in the compose
// deployment: it writes the invocation's input JSON (its stdin) back to
// stdout unchanged. The container image has no shell and no coreutils, so
// the example tool is this small static program rather than /bin/cat.
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	if _, err := io.Copy(os.Stdout, os.Stdin); err != nil {
		fmt.Fprintf(os.Stderr, "switchboard-echo: copying the input to the output: %v\n", err)
		os.Exit(1)
	}
}
