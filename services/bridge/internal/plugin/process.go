package plugin

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	"github.com/switchboard-run/switchboard/services/bridge/internal/child"
)

// process is one running backend: its pipes, and when it exited.
type process struct {
	cmd    *exec.Cmd
	stdin  *os.File // the bridge's end: the backend reads the other
	stdout *os.File // the bridge's end: the backend writes the other
	exited chan struct{}
	read   chan struct{} // closed when the reader has finished with stdout
	err    error         // Wait's error, set before exited is closed
}

// spawn starts the manifest's command in a process group of its own, so
// stopping it also stops whatever it started. Its stderr goes to stderr.
func spawn(m *bridgev1.PluginManifest, stderr io.Writer) (*process, error) {
	argv := m.GetCommand()
	if len(argv) == 0 {
		return nil, errors.New("the manifest's command is empty")
	}
	// A grandchild holding stderr open must not keep Wait from returning.
	cmd := child.Command(argv, m.GetEnv(), m.GetCwd(), stderr, Grace)
	// Pipes of our own rather than StdoutPipe: Wait must be free to run
	// while the reader still drains what the backend wrote before it died.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	err = cmd.Start()
	inR.Close() // the child holds its own copies
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, err
	}
	p := &process{cmd: cmd, stdin: inW, stdout: outR, exited: make(chan struct{}), read: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// pid is the backend's process id.
func (p *process) pid() int { return p.cmd.Process.Pid }

// kill ends the backend's whole process group.
func (p *process) kill() {
	child.KillGroup(p.cmd)
}

// state says how the process ended ("exit status 3", "signal: killed");
// call it only after exited is closed.
func (p *process) state() string {
	if p.cmd.ProcessState != nil {
		return p.cmd.ProcessState.String()
	}
	if p.err != nil {
		return p.err.Error()
	}
	return "it ended"
}

// exitError is why the backend is gone, for the supervisor's fault.
func (p *process) exitError() error {
	return fmt.Errorf("the plugin backend exited (%s)", p.state())
}
