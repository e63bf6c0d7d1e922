// Command mailbox runs the mailbox alone; `switchboard mailbox` is the same.
package main

import (
	"github.com/switchboard-run/switchboard/kit/suite/process"
	"github.com/switchboard-run/switchboard/services/mailbox"
)

func main() { process.Main("mailbox", mailbox.Main) }
