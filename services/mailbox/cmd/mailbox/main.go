// Command mailbox runs the mailbox alone; `switchboard mailbox` is the same.
package main

import (
	"github.com/switchboard-run/switchboard/kit/config"
	"github.com/switchboard-run/switchboard/services/mailbox"
)

func main() { config.Main("mailbox", mailbox.Main) }
