// Package plugin runs one JSON-lines plugin backend (docs/design.md §7): a
// long-lived process that reads one JSON object per line on stdin and
// writes one per line on stdout.
//
// A Backend is one process's life, started at once or at its first call.
// It sends `init` first, then each call as a `request`, one at a time and
// in the order the calls were submitted: the next request leaves only after
// the previous one's reply, the process's death, or its cancellation (sent
// as `cancel`; the late reply is dropped). Messages the backend sends
// meanwhile (log, notice, fault, view, notify, subscribe) are reported, in
// the order they arrive, before the reply they precede is answered. Lines
// longer than the manifest's bound are dropped with a fault, without being
// held whole. Close sends `shutdown`, closes stdin, and kills the process
// group if it has not exited within Grace.
//
// A Backend does not restart: when its process dies, Done is closed and
// Err says why, and its owner (the bridge's supervisor) starts a new one.
package plugin

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
	"github.com/switchboard-run/switchboard/services/bridge/internal/results"
)

// Grace is how long Close waits for a backend to exit after `shutdown` and
// the end of its stdin before it kills the process group. A backend that
// closes its stdout gets as long to exit before it is killed.
const Grace = 500 * time.Millisecond

// DefaultMaxLineBytes bounds a line from a backend whose manifest sets no
// bound.
const DefaultMaxLineBytes = 1 << 20

// keptCancelled bounds the request ids remembered as cancelled, whose late
// replies are dropped with a notice naming them.
const keptCancelled = 64

// ErrClosed is the reason of a backend its owner stopped.
var ErrClosed = errors.New("the plugin backend was stopped")

// Options say what to run and where its reports go.
type Options struct {
	// Client is the client the backend is mounted as; `init` carries it.
	Client string
	// Manifest is the backend's command and bounds.
	Manifest *bridgev1.PluginManifest
	// Restart counts earlier starts of this mount's backend; `init`
	// carries it.
	Restart int
	// Stderr receives the backend's stderr and its log lines.
	Stderr io.Writer
	// OnNotice receives log, notice, view, notify and subscribe messages,
	// and notes about replies that were not awaited.
	OnNotice func(string)
	// OnFault receives fault messages and the wire's faults: a line too
	// long, a line that is not a JSON object.
	OnFault func(string)
	// MaxResultChars caps a capture's stdout and stderr each (<= 0: the
	// bridge's default).
	MaxResultChars int
}

// Backend is one backend process's life and the queue of calls to it.
type Backend struct {
	opts    Options
	maxLine int
	wake    chan struct{} // a call was queued
	done    chan struct{} // closed when the backend has ended for good
	startMu sync.Mutex    // one start, or the start of a close, at a time
	writeMu sync.Mutex    // one line at a time on stdin

	mu        sync.Mutex
	proc      *process // nil until started
	queue     []*Call
	inflight  *Call // the call whose request was sent and not yet answered
	nextID    int64
	cancelled map[int64]bool
	closing   bool
	ended     bool
	err       error
}

// New returns a backend that starts its process at Start or at its first
// call.
func New(opts Options) *Backend {
	if opts.OnNotice == nil {
		opts.OnNotice = func(string) {}
	}
	if opts.OnFault == nil {
		opts.OnFault = func(string) {}
	}
	if opts.Stderr == nil {
		opts.Stderr = io.Discard
	}
	if opts.MaxResultChars <= 0 {
		opts.MaxResultChars = results.DefaultMaxChars
	}
	maxLine := int(opts.Manifest.GetMaxLineBytes())
	if maxLine <= 0 {
		maxLine = DefaultMaxLineBytes
	}
	b := &Backend{opts: opts, maxLine: maxLine, wake: make(chan struct{}, 1),
		done: make(chan struct{}), cancelled: map[int64]bool{}}
	go b.dispatch()
	return b
}

// Start starts the process now and sends `init`, unless it was started
// already. An error means it could not start, and the backend has ended.
func (b *Backend) Start() error {
	b.startMu.Lock()
	defer b.startMu.Unlock()
	b.mu.Lock()
	started, ended, err := b.proc != nil, b.ended || b.closing, b.err
	b.mu.Unlock()
	switch {
	case ended && err == nil:
		return ErrClosed
	case ended:
		return err
	case started:
		return nil
	}
	p, err := spawn(b.opts.Manifest, b.opts.Stderr)
	if err != nil {
		err = fmt.Errorf("could not start the plugin backend: %w", err)
		b.end(err)
		return err
	}
	b.mu.Lock()
	b.proc = p
	b.mu.Unlock()
	go b.read(p)
	go b.watch(p)
	b.write(p, initMsg{Type: "init", Restart: b.opts.Restart, Client: b.opts.Client})
	return nil
}

// Started reports whether the process was started.
func (b *Backend) Started() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.proc != nil
}

// PID is the process id, or 0 before the start.
func (b *Backend) PID() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.proc == nil {
		return 0
	}
	return b.proc.pid()
}

// InFlight is 1 while a request awaits its reply, else 0.
func (b *Backend) InFlight() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.inflight != nil {
		return 1
	}
	return 0
}

// Done is closed when the backend has ended: its process died, it could
// not start, or it was closed.
func (b *Backend) Done() <-chan struct{} { return b.done }

// Err says why the backend ended; nil while it lives.
func (b *Backend) Err() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// Close stops the backend: `shutdown`, then the end of its stdin, then,
// if it has not exited within Grace, SIGKILL to its process group. Calls
// not answered yet are left unanswered. Safe to call more than once.
func (b *Backend) Close() error {
	b.startMu.Lock()
	b.mu.Lock()
	already := b.closing
	b.closing = true
	p := b.proc
	b.mu.Unlock()
	b.startMu.Unlock()
	switch {
	case already:
		<-b.done
		return nil
	case p == nil:
		b.end(ErrClosed)
		return nil
	}
	// A backend that does not read its stdin must not hold the shutdown up.
	_ = p.stdin.SetWriteDeadline(time.Now().Add(Grace / 5))
	b.write(p, shutdownMsg{Type: "shutdown"})
	_ = p.stdin.Close()
	t := time.NewTimer(Grace)
	select {
	case <-p.exited:
		t.Stop()
	case <-t.C:
	}
	p.kill()
	<-b.done
	return nil
}

// write sends one message. A backend whose stdin cannot be written can
// never be called again: unless it is being closed, it is killed, which
// ends it as a crash.
func (b *Backend) write(p *process, msg any) {
	line, err := encode(msg)
	if err != nil { // fixed shapes: only a request carries outside JSON, and run encodes it itself
		b.opts.OnFault(fmt.Sprintf("could not encode a %T for the backend: %v", msg, err))
		return
	}
	b.writeLine(p, line)
}

// writeLine sends one encoded message; see write.
func (b *Backend) writeLine(p *process, line []byte) {
	b.writeMu.Lock()
	_, err := p.stdin.Write(line)
	b.writeMu.Unlock()
	if err == nil {
		return
	}
	b.mu.Lock()
	closing := b.closing
	b.mu.Unlock()
	if !closing {
		b.opts.OnFault(fmt.Sprintf("could not write to the backend's stdin (%v); it is stopped", err))
		p.kill()
	}
}

// watch waits for the process to exit, lets the reader take what it wrote
// before it died (so a reply sent just before exiting still answers its
// call), and ends the backend.
func (b *Backend) watch(p *process) {
	<-p.exited
	t := time.NewTimer(Grace)
	select {
	case <-p.read:
		t.Stop()
	case <-t.C: // a grandchild holds stdout open
		_ = p.stdout.Close()
		<-p.read
	}
	p.kill() // whatever it left behind in its group
	b.end(p.exitError())
}

// end ends the backend with err (ErrClosed when it is being closed): the
// call in flight gets a capture saying the backend crashed while running
// it, and queued calls, never sent, are left for the mailbox to hand out
// again.
func (b *Backend) end(err error) {
	b.mu.Lock()
	if b.ended {
		b.mu.Unlock()
		return
	}
	b.ended = true
	closing := b.closing
	if closing {
		err = ErrClosed
	}
	b.err = err
	c, queue := b.inflight, b.queue
	b.inflight, b.queue = nil, nil
	b.mu.Unlock()
	if c != nil && closing {
		c.finish(nil, false)
	} else if c != nil {
		c.finish(capture.Failed(capture.ExitError,
			"plugin backend %q crashed while running tool %q: %v; it may have done part of the work, so read the world before acting again",
			b.opts.Client, c.tool, err), true)
	}
	for _, q := range queue {
		q.finish(nil, false)
	}
	close(b.done)
}
