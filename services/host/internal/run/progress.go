package run

import (
	"bytes"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/switchboard-run/switchboard/kit/suite/capture"
	"github.com/switchboard-run/switchboard/kit/suite/follower"
)

// Marker starts a stderr line that reports progress (docs/design.md §6):
// "::progress:: 3/10 copying files"; the numbers and the total are
// optional, and a line without a number counts one step on. Marked lines
// are kept out of the capture's stderr.
const Marker = "::progress::"

// MaxProgressLine bounds what is read of one marked line; the rest of a
// longer one is dropped (the mailbox keeps 1,000 characters of a message).
const MaxProgressLine = 4 << 10

// numbers is the optional leading "progress[/total]" of a marked line:
// plain decimals, so a message such as "inf" or "1e3 files" stays a message.
var numbers = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)(?:/([0-9]+(?:\.[0-9]+)?))?$`)

// progressLines splits a tool's stderr: marked lines go to report as notes,
// the rest to out as written. Only the start of a line is held back, while
// it may yet be the marker, and a marked line up to MaxProgressLine.
type progressLines struct {
	out    io.Writer
	report func(follower.Note)
	state  lineState
	line   []byte // the line's start (lineStart), or the marked line
}

type lineState int

const (
	lineStart  lineState = iota // deciding whether the line is marked
	linePlain                   // an unmarked line: passed through to its end
	lineMarked                  // a marked line: held to its end
)

func (w *progressLines) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		switch w.state {
		case linePlain:
			i := bytes.IndexByte(p, '\n')
			if i < 0 {
				_, _ = w.out.Write(p)
				return n, nil
			}
			_, _ = w.out.Write(p[:i+1])
			p, w.state = p[i+1:], lineStart
		case lineStart:
			take := min(len(Marker)-len(w.line), len(p))
			if i := bytes.IndexByte(p[:take], '\n'); i >= 0 {
				take = i + 1
			}
			w.line, p = append(w.line, p[:take]...), p[take:]
			switch {
			case !strings.HasPrefix(Marker, string(w.line)):
				_, _ = w.out.Write(w.line)
				w.state = linePlain
				if w.line[len(w.line)-1] == '\n' {
					w.state = lineStart
				}
				w.line = w.line[:0]
			case len(w.line) == len(Marker):
				w.state = lineMarked
			}
		case lineMarked:
			i := bytes.IndexByte(p, '\n')
			seg := p
			if i >= 0 {
				seg = p[:i]
			}
			w.line = append(w.line, seg[:min(len(seg), max(MaxProgressLine-len(w.line), 0))]...)
			if i < 0 {
				return n, nil
			}
			w.emit()
			p, w.state = p[i+1:], lineStart
		}
	}
	return n, nil
}

// flush ends the output: a last marked line without its newline is still
// progress, and the start of a line that might have been one is stderr.
func (w *progressLines) flush() {
	switch w.state {
	case lineMarked:
		w.emit()
	case lineStart:
		_, _ = w.out.Write(w.line)
	}
	w.line, w.state = nil, lineStart
}

// emit reports the marked line held and forgets it.
func (w *progressLines) emit() {
	w.report(parseProgress(w.line[len(Marker):]))
	w.line = w.line[:0]
}

// parseProgress reads what follows the marker.
func parseProgress(rest []byte) follower.Note {
	text := strings.TrimSpace(capture.Text(rest))
	first, msg, _ := strings.Cut(text, " ")
	m := numbers.FindStringSubmatch(first)
	if m == nil {
		return follower.Note{Step: true, Message: text}
	}
	note := follower.Note{Message: strings.TrimSpace(msg)}
	note.Progress, _ = strconv.ParseFloat(m[1], 64) // the pattern admits only decimals
	if m[2] != "" {
		note.Total, _ = strconv.ParseFloat(m[2], 64)
	}
	return note
}
