// Command notebook is an example JSON-lines plugin backend for the
// Switchboard bridge (see docs/plugins.md): a key-value notebook kept in
// memory, with the tools put, get, list and delete.
//
// It reads one JSON object per line on stdin and writes one per line on
// stdout. Because the notebook lives in memory, a restarted backend is
// empty again; it logs each start with the restart count `init` carries.
// During each request it sends a `log` line before its `reply`.
//
//	go build -o bin/notebook ./examples/notebook
//	switchboard mcp mount notes --plugin examples/notebook/manifest.json
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// maxLine bounds one line from the bridge (a call's arguments).
const maxLine = 16 << 20

// message is one line from the bridge.
type message struct {
	Type    string          `json:"type"`
	ID      json.RawMessage `json:"id"`
	Restart int             `json:"restart"`
	Client  string          `json:"client"`
	Method  string          `json:"method"`
	Params  struct {
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"params"`
}

func main() {
	if err := serve(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "notebook:", err)
		os.Exit(1)
	}
}

// serve answers the bridge's messages from in on out until `shutdown` or
// the end of in.
func serve(in io.Reader, out io.Writer) error {
	w := &writer{out: bufio.NewWriter(out)}
	n := newNotebook()
	lines := bufio.NewScanner(in)
	lines.Buffer(make([]byte, 0, 64<<10), maxLine)
	for lines.Scan() {
		var m message
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			w.send(map[string]any{"type": "fault", "text": fmt.Sprintf("the notebook could not read a line: %v", err)})
			continue
		}
		switch m.Type {
		case "init":
			w.send(map[string]any{"type": "log", "text": fmt.Sprintf("notebook for %q started (restart %d): it is empty", m.Client, m.Restart)})
		case "request":
			if m.Method != "tool" {
				w.send(map[string]any{"type": "reply", "id": m.ID, "error": fmt.Sprintf("the notebook answers tool requests, not %q", m.Method)})
				continue
			}
			w.send(map[string]any{"type": "log", "text": fmt.Sprintf("%s %s", m.Params.Name, m.Params.Args)})
			result, err := n.call(m.Params.Name, m.Params.Args)
			if err != nil {
				w.send(map[string]any{"type": "reply", "id": m.ID, "error": err.Error()})
			} else {
				w.send(map[string]any{"type": "reply", "id": m.ID, "result": result})
			}
		case "shutdown":
			return w.err
		default:
			// cancel: every call is answered at once, so there is nothing to
			// stop; the bridge drops the late reply. Newer types are ignored.
		}
		if w.err != nil {
			return w.err
		}
	}
	return lines.Err()
}

// writer sends one message per line, flushed at once.
type writer struct {
	out *bufio.Writer
	err error
}

func (w *writer) send(msg any) {
	if w.err != nil {
		return
	}
	enc := json.NewEncoder(w.out) // Encode ends each message with a newline
	enc.SetEscapeHTML(false)
	if w.err = enc.Encode(msg); w.err == nil {
		w.err = w.out.Flush()
	}
}
