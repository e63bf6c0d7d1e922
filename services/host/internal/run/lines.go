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
// (asks.go's too) are kept out of the capture's stderr.
const Marker = "::progress::"

// MaxProgressLine bounds what is read of one marked line; the rest of a
// longer one is dropped (the mailbox keeps 1,000 characters of a message).
const MaxProgressLine = 4 << 10

// numbers is the optional leading "progress[/total]" of a marked line:
// plain decimals, so a message such as "inf" or "1e3 files" stays a message.
var numbers = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)(?:/([0-9]+(?:\.[0-9]+)?))?$`)

// markedLines splits a tool's stderr: lines marked as progress go to report
// as notes, lines marked as asks to ask (asks.go), the rest to out as
// written. Only the start of a line is held back, while it may yet be a
// marker, and a marked line up to its marker's bound.
type markedLines struct {
	out    io.Writer
	report func(follower.Note)
	ask    func([]byte) // what follows AskMarker; nil: asks are dropped
	state  lineState
	marker string // the marked line's
	line   []byte // the line's start (lineStart), or the marked line
}

type lineState int

const (
	lineStart  lineState = iota // deciding whether the line is marked
	linePlain                   // an unmarked line: passed through to its end
	lineMarked                  // a marked line: held to its end
)

// markers are the markers a line may start with, and how much of a marked
// line is kept.
var markers = map[string]int{Marker: MaxProgressLine, AskMarker: MaxAskLine}

// longestMarker is the most a line's start is held back for.
const longestMarker = len(Marker)

func (w *markedLines) Write(p []byte) (int, error) {
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
			take := min(longestMarker-len(w.line), len(p))
			if i := bytes.IndexByte(p[:take], '\n'); i >= 0 {
				take = i + 1
			}
			w.line, p = append(w.line, p[:take]...), p[take:]
			if m := markerOf(w.line); m != "" {
				w.state, w.marker = lineMarked, m
				if i := bytes.IndexByte(w.line, '\n'); i >= 0 { // the whole line came with the marker
					w.line = w.line[:i]
					w.emit()
					w.state = lineStart
				}
				continue
			}
			if !mayBeMarked(w.line) {
				_, _ = w.out.Write(w.line)
				w.state = linePlain
				if w.line[len(w.line)-1] == '\n' {
					w.state = lineStart
				}
				w.line = w.line[:0]
			}
		case lineMarked:
			i := bytes.IndexByte(p, '\n')
			seg := p
			if i >= 0 {
				seg = p[:i]
			}
			w.line = append(w.line, seg[:min(len(seg), max(markers[w.marker]-len(w.line), 0))]...)
			if i < 0 {
				return n, nil
			}
			w.emit()
			p, w.state = p[i+1:], lineStart
		}
	}
	return n, nil
}

// markerOf is the marker line starts with, or "".
func markerOf(line []byte) string {
	for m := range markers {
		if bytes.HasPrefix(line, []byte(m)) {
			return m
		}
	}
	return ""
}

// mayBeMarked reports whether line, without a newline yet, is the start of
// a marker.
func mayBeMarked(line []byte) bool {
	if bytes.IndexByte(line, '\n') >= 0 {
		return false
	}
	for m := range markers {
		if strings.HasPrefix(m, string(line)) {
			return true
		}
	}
	return false
}

// flush ends the output: a last marked line without its newline is still
// progress, and the start of a line that might have been one is stderr.
func (w *markedLines) flush() {
	switch w.state {
	case lineMarked:
		w.emit()
	case lineStart:
		_, _ = w.out.Write(w.line)
	}
	w.line, w.state = nil, lineStart
}

// emit passes the marked line held on and forgets it.
func (w *markedLines) emit() {
	rest := bytes.TrimSuffix(w.line[len(w.marker):], []byte("\r"))
	if w.marker == AskMarker {
		if w.ask != nil {
			w.ask(rest)
		}
	} else {
		w.report(parseProgress(rest))
	}
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
