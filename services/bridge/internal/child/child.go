// Package child builds the commands of the programs the bridge runs — stdio
// MCP servers and plugin backends — the one way both are run: in a process
// group of their own, with an allowlisted environment (kit/lib/childenv), never
// the bridge's own.
package child

import (
	"io"
	"os/exec"
	"syscall"
	"time"

	"github.com/switchboard-run/switchboard/kit/lib/childenv"
)

// Command returns the command for argv: the environment childenv allows
// from the bridge's own, then env (the config's, which wins; sorted, so
// every restart gets the same environment), cwd ("" for the bridge's),
// stderr (nil discards it),
// a process group of its own — so stopping it also stops what it started,
// launchers such as npx, uvx and sh -c included — and waitDelay bounding
// Wait when a grandchild still holds one of its pipes.
func Command(argv []string, env map[string]string, cwd string, stderr io.Writer, waitDelay time.Duration) *exec.Cmd {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = cwd
	cmd.Env = childenv.Environ(env, nil)
	if stderr == nil {
		stderr = io.Discard
	}
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = waitDelay
	return cmd
}

// KillGroup ends whatever is left of a started command's process group.
func KillGroup(cmd *exec.Cmd) {
	if cmd != nil && cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
