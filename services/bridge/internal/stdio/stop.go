package stdio

import (
	"errors"
	"fmt"
	"io"
	"os/exec"
	"syscall"
	"time"
)

// stop ends the server as the MCP specification's stdio shutdown asks, and
// as the SDK's CommandTransport does: close its stdin, wait up to grace for
// it to exit, then SIGTERM, wait again, then SIGKILL. It returns Wait's
// error, so that the caller sees how the server ended (cmd.ProcessState).
func stop(cmd *exec.Cmd, stdin io.Closer, grace time.Duration) error {
	// A failed close still goes on to the signals: the process must not
	// outlive the connection.
	closeErr := stdin.Close()
	if closeErr != nil {
		closeErr = fmt.Errorf("closing the server's stdin: %w", closeErr)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	wait := func() (error, bool) {
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case err := <-exited:
			return err, true
		case <-t.C:
			return nil, false
		}
	}
	if err, ok := wait(); ok {
		return errors.Join(closeErr, err)
	}
	// If SIGTERM cannot be sent, waiting for it to work is pointless.
	if cmd.Process.Signal(syscall.SIGTERM) == nil {
		if err, ok := wait(); ok {
			return errors.Join(closeErr, err)
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		return errors.Join(closeErr, err)
	}
	if err, ok := wait(); ok {
		return errors.Join(closeErr, err)
	}
	return fmt.Errorf("the server (pid %d) did not exit %v after SIGKILL", cmd.Process.Pid, grace)
}
