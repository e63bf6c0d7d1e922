package plugin

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
	"github.com/switchboard-run/switchboard/services/bridge/internal/results"
)

// quotedChars bounds how much of a bad line a fault quotes.
const quotedChars = 200

// read takes the backend's stdout line by line until it ends. Lines are
// handled in order on this one goroutine, so whatever the backend sent
// before a reply is reported before that reply answers its call.
func (b *Backend) read(p *process) {
	defer close(p.read)
	lines := newLineReader(p.stdout, b.maxLine)
	for {
		line, dropped, err := lines.next()
		if err != nil {
			break
		}
		if dropped > 0 {
			b.opts.OnFault(fmt.Sprintf("dropped a %d-byte line from the backend: lines are bounded to %d bytes (max_line_bytes)", dropped, b.maxLine))
			continue
		}
		b.handle(line)
	}
	_ = p.stdout.Close()
	// A backend that lives on without its stdout can never answer again.
	t := time.NewTimer(Grace)
	defer t.Stop()
	select {
	case <-p.exited:
	case <-t.C:
		b.mu.Lock()
		closing := b.closing
		b.mu.Unlock()
		if !closing {
			b.opts.OnFault("the backend closed its stdout but did not exit; it is stopped")
		}
		p.kill()
	}
}

// handle acts on one line from the backend.
func (b *Backend) handle(line []byte) {
	if len(strings.TrimSpace(string(line))) == 0 {
		return
	}
	msg, err := decode(line)
	if err != nil {
		b.opts.OnFault(fmt.Sprintf("a line from the backend %v: %q", err, capture.Cap(capture.Text(line), quotedChars)))
		return
	}
	switch msg.typ {
	case "reply":
		b.reply(msg)
	case "log":
		text := msg.text("text")
		_, _ = b.opts.Stderr.Write([]byte(strings.TrimSuffix(text, "\n") + "\n"))
		b.opts.OnNotice("log: " + text)
	case "notice":
		b.progress(msg)
		if level := msg.text("level"); level != "" {
			b.opts.OnNotice(fmt.Sprintf("notice (%s): %s", level, msg.text("text")))
		} else {
			b.opts.OnNotice("notice: " + msg.text("text"))
		}
	case "fault":
		b.opts.OnFault("the backend reported: " + msg.text("text"))
	case "ask":
		b.ask(msg)
	case "view", "notify", "subscribe":
		// Accepted: the bridge has no clients to draw views for or to
		// notify, so they are surfaced in status as sent.
		b.opts.OnNotice(msg.typ + ": " + string(msg.line))
	default:
		// Unknown types are ignored: a newer backend may speak more.
	}
}

// reply answers the call in flight, if the reply is its own.
func (b *Backend) reply(msg message) {
	id, ok := msg.id()
	b.mu.Lock()
	c := b.inflight
	if c == nil || !ok || c.id != id {
		late := ok && b.cancelled[id]
		delete(b.cancelled, id)
		b.mu.Unlock()
		if late {
			b.opts.OnNotice(fmt.Sprintf("dropped the late reply to request %d, which was cancelled", id))
		} else {
			b.opts.OnNotice(fmt.Sprintf("ignored a reply to request %s, which is not in flight", msg.text("id")))
		}
		return
	}
	b.inflight = nil
	b.mu.Unlock()
	c.finish(b.replyCapture(msg, c.tool), true)
}

// replyCapture maps a reply: a result is stdout (a string as itself, any
// other value as compact JSON), exit 0; an error is exit 1 with its text on
// stderr ("error": null is no error); an mcp_result is an MCP tool result,
// mapped as a mounted server's is. A reply with none is a failure too.
func (b *Backend) replyCapture(msg message, tool string) *mailboxv1.Capture {
	limit := b.opts.MaxResultChars
	if msg.has("mcp_result") {
		if msg.carries("result") || msg.carries("error") {
			return capture.Failed(capture.ExitError, `plugin backend %q replied to tool %q with "mcp_result" beside "result" or "error"; a reply carries one of them`, b.opts.Client, tool)
		}
		var res mcp.CallToolResult
		if err := json.Unmarshal(msg.fields["mcp_result"], &res); err != nil {
			return capture.Failed(capture.ExitError, "plugin backend %q replied to tool %q with an mcp_result that is not an MCP tool result: %v", b.opts.Client, tool, err)
		}
		return results.FromResult(&res, limit)
	}
	if msg.has("error") {
		text := msg.text("error")
		if text == "" {
			text = "the tool reported an error and gave no message"
		}
		return capture.New("", capture.Cap(text, limit), capture.ExitError)
	}
	if msg.carries("result") {
		return capture.New(capture.Cap(msg.text("result"), limit), "", 0)
	}
	return capture.Failed(capture.ExitError, "plugin backend %q replied to tool %q with neither a result nor an error", b.opts.Client, tool)
}
