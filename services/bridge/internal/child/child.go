// Package child builds the commands of the programs the bridge runs — stdio
// MCP servers and plugin backends — the one way both are run: in a process
// group of their own, with a stable environment.
package child

import (
	"io"
	"os"
	"os/exec"
	"sort"
	"syscall"
	"time"
)

// Command returns the command for argv: the bridge's environment plus env
// (added in sorted order, so every restart gets the same environment; later
// entries win in exec), cwd ("" for the bridge's), stderr (nil discards it),
// a process group of its own — so stopping it also stops what it started,
// launchers such as npx, uvx and sh -c included — and waitDelay bounding
// Wait when a grandchild still holds one of its pipes.
func Command(argv []string, env map[string]string, cwd string, stderr io.Writer, waitDelay time.Duration) *exec.Cmd {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = cwd
	cmd.Env = os.Environ()
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		cmd.Env = append(cmd.Env, k+"="+env[k])
	}
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
