package stdio

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// bufSize is the read buffer: large enough for the common message, so
// that a line is decoded where it was read, without a copy.
const bufSize = 64 << 10

// lines splits the server's stdout into lines, at most max bytes each.
type lines struct {
	r    *bufio.Reader
	max  int
	long []byte // a line longer than the buffer, assembled; reused
}

// next returns the next line, its newline included, valid until the next
// call. A final line without a newline is a line too, as the SDK's decoder
// takes a last value ended by EOF.
func (l *lines) next() ([]byte, error) {
	if cap(l.long) > keepBuffer {
		l.long = nil
	}
	line, err := l.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		line, err = l.assemble(line)
	}
	if err == io.EOF && len(line) > 0 {
		err = nil
	}
	if err != nil {
		return nil, err
	}
	if n := len(trimNewline(line)); n > l.max {
		return nil, l.tooLong()
	}
	return line, nil
}

// assemble reads the rest of a line that filled the buffer, stopping as
// soon as it is longer than max: a server that never writes a newline
// costs max bytes, not the bridge's memory.
func (l *lines) assemble(first []byte) ([]byte, error) {
	l.long = append(l.long[:0], first...)
	for {
		if len(l.long) > l.max+2 { // longer than max with "\r\n" allowed for
			return nil, l.tooLong()
		}
		more, err := l.r.ReadSlice('\n')
		l.long = append(l.long, more...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return l.long, err
		}
	}
}

func (l *lines) tooLong() error {
	return fmt.Errorf("the server wrote a line longer than %d bytes, the most one message may take over stdio", l.max)
}

// trimNewline drops a line's "\n" or "\r\n".
func trimNewline(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
		if n := len(b); n > 0 && b[n-1] == '\r' {
			b = b[:n-1]
		}
	}
	return b
}

// trimSpace drops JSON's whitespace (space, tab, CR, LF) from both ends.
func trimSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }
