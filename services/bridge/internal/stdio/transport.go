// Package stdio is the bridge's MCP transport to a server it runs as a
// child process: newline-delimited JSON-RPC over the child's stdin and
// stdout, as the SDK's mcp.CommandTransport speaks it, but reading every
// line into one reused buffer and decoding it once (docs/bench.md, "The
// MCP endpoint's hot path"). The SDK's own connection decodes each line
// twice, each time with a decoder that allocates 32 KiB.
package stdio

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// defaultTerminate is the SDK's default wait before each signal on Close.
const defaultTerminate = 5 * time.Second

// Transport runs Command and speaks MCP over its stdin and stdout. It is
// an mcp.Transport, for one Connect.
type Transport struct {
	// Command is the server, not yet started; its Stderr is left as set.
	Command *exec.Cmd
	// TerminateDuration is how long Close waits for the server to exit
	// after closing its stdin, and again after SIGTERM, before SIGKILL;
	// zero: 5 s, as the SDK's.
	TerminateDuration time.Duration
	// MaxLineLength bounds one line (one message) from the server, the
	// newline excluded; zero: mcp.DefaultMaxLineLength.
	MaxLineLength int
	// DecodeToolResults has the connection decode the answers to tools/call
	// itself (toolresult.go); the client must then add ToolResults first.
	DecodeToolResults bool
	// OnLog, when set, hears the params of each notifications/message as
	// the connection reads it, before any message after it reaches the SDK
	// (whose handlers see notifications later than the replies that follow).
	OnLog func(params json.RawMessage)
}

// readDeadliner is the part of an *os.File that lets Close unblock a Read
// without closing the pipe, which the server may still be writing to as
// it shuts down.
type readDeadliner interface {
	io.Reader
	SetReadDeadline(time.Time) error
}

// Connect starts the command with pipes on its stdin and stdout.
func (t *Transport) Connect(context.Context) (mcp.Connection, error) {
	stdout, err := t.Command.StdoutPipe()
	if err != nil {
		return nil, err
	}
	out, ok := stdout.(readDeadliner)
	if !ok {
		return nil, fmt.Errorf("the stdout pipe of %q is a %T, which has no read deadline", t.Command.Path, stdout)
	}
	stdin, err := t.Command.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := t.Command.Start(); err != nil {
		return nil, err
	}
	max := t.MaxLineLength
	if max <= 0 {
		max = mcp.DefaultMaxLineLength
	}
	terminate := t.TerminateDuration
	if terminate <= 0 {
		terminate = defaultTerminate
	}
	c := &conn{cmd: t.Command, stdin: stdin, stdout: out, terminate: terminate,
		lines: newLines(out, max), onLog: t.OnLog}
	if t.DecodeToolResults {
		c.calls = &pendingCalls{}
	}
	return c, nil
}

// conn is one connection to a started server.
type conn struct {
	cmd       *exec.Cmd
	stdin     io.WriteCloser
	stdout    readDeadliner
	terminate time.Duration

	// Reads are serialised by the SDK (one reading goroutine), so the
	// read side needs no lock; only Close runs beside it.
	lines *lines
	queue []jsonrpc.Message // the rest of the last batch read

	writeMu sync.Mutex
	wbuf    []byte // the line being written, reused

	batches batches

	calls *pendingCalls // nil: the SDK decodes every answer
	onLog func(json.RawMessage)

	closing   atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

// Read returns the next message from the server. A Read blocked for input
// returns io.EOF once Close is called, and ctx.Err() when ctx ends; after
// either the connection is unusable, as the SDK closes it on any error.
func (c *conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.read(ctx)
	if req, ok := msg.(*jsonrpc.Request); ok && err == nil && c.onLog != nil && req.Method == logMethod && !req.IsCall() {
		c.onLog(req.Params)
	}
	return msg, err
}

// logMethod is the notification of a server's log message.
const logMethod = "notifications/message"

func (c *conn) read(ctx context.Context) (jsonrpc.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if c.closing.Load() {
		return nil, io.EOF
	}
	if len(c.queue) > 0 {
		next := c.queue[0]
		c.queue[0] = nil
		c.queue = c.queue[1:]
		return next, nil
	}
	if ctx.Done() != nil { // the SDK's own reader's context never ends
		stop := context.AfterFunc(ctx, c.interrupt)
		defer stop()
	}
	for {
		line, err := c.lines.next()
		if err != nil {
			switch {
			case c.closing.Load():
				return nil, io.EOF
			case ctx.Err() != nil:
				return nil, ctx.Err()
			}
			return nil, err
		}
		if line = trimSpace(line); len(line) == 0 {
			continue // a blank line, which the SDK's decoder skips too
		}
		if line[0] != '[' {
			msg, err := decodeLine(line)
			if err != nil {
				return nil, err
			}
			return c.toolResult(msg), nil
		}
		msgs, err := decodeBatch(line)
		if err != nil {
			return nil, err
		}
		if err := c.batches.add(msgs); err != nil {
			return nil, err
		}
		for i := range msgs {
			msgs[i] = c.toolResult(msgs[i])
		}
		c.queue = msgs[1:]
		return msgs[0], nil
	}
}

// interrupt unblocks a Read waiting for the server.
func (c *conn) interrupt() { _ = c.stdout.SetReadDeadline(time.Now()) }

// Write sends msg as one line. Calls may come from many goroutines.
func (c *conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if c.closing.Load() {
		return mcp.ErrConnectionClosed
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if resp, ok := msg.(*jsonrpc.Response); ok {
		if done, inBatch := c.batches.answer(resp); inBatch {
			if done == nil {
				return nil // the batch's other requests are still running
			}
			return c.writeBatch(done)
		}
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encoding a message for the server: %w", err)
	}
	c.sent(msg)
	c.wbuf = append(append(c.wbuf[:0], data...), '\n')
	return c.flush()
}

// writeBatch sends the answers to one batch as one array, in the order of
// its requests.
func (c *conn) writeBatch(resps []*jsonrpc.Response) error {
	c.wbuf = append(c.wbuf[:0], '[')
	for i, r := range resps {
		data, err := jsonrpc.EncodeMessage(r)
		if err != nil {
			return fmt.Errorf("encoding a batch answer for the server: %w", err)
		}
		if i > 0 {
			c.wbuf = append(c.wbuf, ',')
		}
		c.wbuf = append(c.wbuf, data...)
	}
	c.wbuf = append(c.wbuf, ']', '\n')
	return c.flush()
}

// keepBuffer is the most a buffer keeps between messages: one large
// message should not pin its size for the connection's life.
const keepBuffer = 1 << 20

// flush writes wbuf, under writeMu.
func (c *conn) flush() error {
	_, err := c.stdin.Write(c.wbuf)
	if cap(c.wbuf) > keepBuffer {
		c.wbuf = nil
	}
	if err != nil && c.closing.Load() {
		return errors.Join(mcp.ErrConnectionClosed, err)
	}
	return err
}

// Close ends the connection and the server: its stdin is closed, then
// SIGTERM and SIGKILL follow, each after TerminateDuration (stop). It may
// be called many times, concurrently; all return the first one's error.
func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		c.closing.Store(true)
		c.interrupt()
		c.closeErr = stop(c.cmd, c.stdin, c.terminate)
	})
	return c.closeErr
}

// SessionID is empty: stdio has no session id.
func (c *conn) SessionID() string { return "" }

// newLines reads r with a buffer of bufSize, or of max+1 when that is less.
func newLines(r io.Reader, max int) *lines {
	return &lines{r: bufio.NewReaderSize(r, min(bufSize, max+1)), max: max}
}
