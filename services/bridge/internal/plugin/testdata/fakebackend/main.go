// Command fakebackend is a JSON-lines plugin backend for the bridge's tests:
// each tool exercises one part of the wire (docs/design.md §7). It keeps every
// message type it receives, in order, so a test can ask what it was sent.
//
// With -stubborn it ignores `shutdown` and the end of its stdin, and stays
// up until it is killed.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"
)

type message struct {
	Type    string          `json:"type"`
	ID      int64           `json:"id"`
	Restart int             `json:"restart"`
	Client  string          `json:"client"`
	Params  json.RawMessage `json:"params"`
	// Traceparent is the request's trace context, when traced.
	Traceparent string `json:"traceparent"`
	// Key, Result and Error are an answer's (to an ask).
	Key    string          `json:"key"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

type params struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

type args struct {
	Code  int    `json:"code"`
	Bytes int    `json:"bytes"`
	Text  string `json:"text"`
}

type backend struct {
	out     *bufio.Writer
	seen    []string
	restart int
	client  string
	hanging int64 // the id of a request left unanswered, 0 if none
	asking  int64 // the id of a request waiting for an answer, 0 if none
}

func main() {
	stubborn := flag.Bool("stubborn", false, "ignore shutdown and the end of stdin")
	flag.Parse()
	b := &backend{out: bufio.NewWriter(os.Stdout)}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for in.Scan() {
		var m message
		if err := json.Unmarshal(in.Bytes(), &m); err != nil {
			fmt.Fprintf(os.Stderr, "fakebackend: bad line %q\n", in.Text())
			continue
		}
		b.seen = append(b.seen, m.Type)
		switch m.Type {
		case "init":
			b.restart, b.client = m.Restart, m.Client
			fmt.Fprintf(os.Stderr, "fakebackend: init restart=%d\n", m.Restart)
		case "request":
			var p params
			_ = json.Unmarshal(m.Params, &p)
			if p.Name == "traceparent" {
				b.reply(m.ID, m.Traceparent)
				continue
			}
			b.request(m.ID, p)
		case "cancel":
			if m.ID == b.hanging {
				b.send(map[string]any{"type": "reply", "id": m.ID, "result": "too late"})
				b.hanging = 0
			}
		case "answer": // the reply to the asking request is the answer, as sent
			if m.ID == b.asking && m.Key == "sure" {
				b.asking = 0
				b.reply(m.ID, map[string]json.RawMessage{"result": m.Result, "error": m.Error})
			}
		case "shutdown":
			if !*stubborn {
				return
			}
		}
	}
	if *stubborn {
		time.Sleep(time.Hour)
	}
}

func (b *backend) send(msg any) {
	enc := json.NewEncoder(b.out) // one line per message, HTML characters as they are
	enc.SetEscapeHTML(false)
	_ = enc.Encode(msg)
	b.out.Flush()
}

func (b *backend) reply(id int64, result any) {
	b.send(map[string]any{"type": "reply", "id": id, "result": result})
}

func (b *backend) request(id int64, p params) {
	var a args
	_ = json.Unmarshal(p.Args, &a)
	switch p.Name {
	case "echo":
		b.send(map[string]any{"type": "log", "text": "echo " + string(p.Args)})
		b.reply(id, p.Args)
	case "text":
		b.reply(id, a.Text)
	case "fail":
		b.send(map[string]any{"type": "reply", "id": id, "error": "it failed: " + a.Text})
	case "empty":
		b.send(map[string]any{"type": "reply", "id": id})
	case "chart": // an MCP result: text, an image, structured content
		b.send(map[string]any{"type": "reply", "id": id, "mcp_result": map[string]any{
			"content": []any{map[string]any{"type": "text", "text": a.Text},
				map[string]any{"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}},
			"structuredContent": map[string]any{"points": 3}}})
	case "mcpboth":
		b.send(map[string]any{"type": "reply", "id": id, "result": "x", "mcp_result": map[string]any{"content": []any{}}})
	case "mcpbad":
		b.send(map[string]any{"type": "reply", "id": id, "mcp_result": map[string]any{"content": "not a list"}})
	case "chatty":
		b.send(map[string]any{"type": "log", "text": "one"})
		b.send(map[string]any{"type": "notice", "text": "two", "level": "info"})
		b.send(map[string]any{"type": "mystery", "text": "from the future"})
		b.send(map[string]any{"type": "view", "id": "v", "key": "", "view": map[string]any{"type": "text", "text": "three"}})
		b.send(map[string]any{"type": "notify", "msg": "four"})
		b.send(map[string]any{"type": "subscribe", "events": []string{"five"}})
		b.send(map[string]any{"type": "fault", "text": "six"})
		b.reply(id, "done")
	case "crash":
		b.send(map[string]any{"type": "log", "text": "about to crash"})
		os.Exit(a.Code)
	case "hang":
		b.hanging = id
	case "ask": // asks with method text (elicitation/create when empty), then answers with the answer
		method := a.Text
		if method == "" {
			method = "elicitation/create"
		}
		b.asking = id
		b.send(map[string]any{"type": "ask", "id": id + 1000, "key": "sure", "method": method, "params": map[string]any{}})
		b.send(map[string]any{"type": "ask", "id": id, "key": "sure", "method": method, "params": map[string]any{"message": "Sure?"}})
	case "progress": // notices as progress notes, and some that are not (docs/plugins.md)
		b.send(map[string]any{"type": "notice", "text": "plain", "level": "info"})
		b.send(map[string]any{"type": "notice", "id": id, "text": "first", "progress": 1, "total": 4})
		b.send(map[string]any{"type": "notice", "id": id, "text": "a step"})
		b.send(map[string]any{"type": "notice", "id": id + 1000, "text": "not yours", "progress": 9})
		b.send(map[string]any{"type": "notice", "id": "v", "text": "no request's id"})
		b.send(map[string]any{"type": "notice", "id": id, "text": "bad", "progress": "lots"})
		b.send(map[string]any{"type": "notice", "id": id, "text": "third", "progress": 3.5, "total": 4})
		if a.Text != "" { // a file to wait for, so a test can read the notes while the call runs
			for {
				if _, err := os.Stat(a.Text); err == nil {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
		b.reply(id, "done")
	case "big":
		b.send(map[string]any{"type": "log", "text": strings.Repeat("x", a.Bytes)})
		b.reply(id, "after big")
	case "garbage":
		b.out.WriteString("this is not json\n[1,2]\n{\"no\":\"type\"}\n\n")
		b.reply(id, "after garbage")
	case "wrongid":
		b.reply(id+1000, "not yours")
		b.reply(id, "yours")
	case "whoami":
		b.reply(id, map[string]any{"restart": b.restart, "client": b.client})
	case "seen":
		b.reply(id, b.seen)
	case "parent": // which bridge runs it: its parent is the bridge process
		b.reply(id, map[string]int{"pid": os.Getpid(), "ppid": os.Getppid()})
	default:
		b.send(map[string]any{"type": "reply", "id": id, "error": "no tool " + p.Name})
	}
}
