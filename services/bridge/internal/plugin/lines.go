package plugin

import (
	"bufio"
	"errors"
	"io"
)

// readChunk is the reader's buffer: a line longer than this is read in
// pieces, never whole beyond the line bound.
const readChunk = 64 << 10

// lineReader reads newline-ended lines of at most max bytes (without the
// newline). It never holds more than max bytes of one line: a longer line
// is read to its end and dropped, and only its length is reported.
type lineReader struct {
	r   *bufio.Reader
	max int
	buf []byte
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, min(readChunk, max+1)), max: max}
}

// next returns the next line, valid until the following call. A line over
// the bound comes back as nil with dropped set to its length in bytes. A
// last line without a newline is returned before io.EOF.
func (l *lineReader) next() (line []byte, dropped int, err error) {
	l.buf = l.buf[:0]
	size, over := 0, false
	for {
		chunk, err := l.r.ReadSlice('\n')
		body := chunk
		if err == nil {
			body = chunk[:len(chunk)-1]
		}
		size += len(body)
		if !over && size > l.max {
			over, l.buf = true, l.buf[:0]
		}
		if !over {
			l.buf = append(l.buf, body...)
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == nil:
		case errors.Is(err, io.EOF) && size > 0:
		default:
			return nil, 0, err
		}
		if over {
			return nil, size, nil
		}
		return l.buf, 0, nil
	}
}
