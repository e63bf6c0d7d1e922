package plugin

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"
)

type readLine struct {
	line    string
	dropped int
}

func TestLineReaderBoundsEveryLine(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("y", 3*readChunk)
	tests := []struct {
		name  string
		input string
		max   int
		want  []readLine
	}{
		{"lines come without their newline", "a\nbc\n", 10, []readLine{{"a", 0}, {"bc", 0}}},
		{"a line exactly at the bound is kept", "12345\nx\n", 5, []readLine{{"12345", 0}, {"x", 0}}},
		{"a line one byte over is dropped and measured", "123456\nx\n", 5, []readLine{{"", 6}, {"x", 0}}},
		{"a last line without a newline is still read", "a\nlast", 10, []readLine{{"a", 0}, {"last", 0}}},
		{"an empty line is a line", "\n\nz\n", 10, []readLine{{"", 0}, {"", 0}, {"z", 0}}},
		{"a line longer than the read buffer is kept under a larger bound", long + "\nx\n", 4 * readChunk, []readLine{{long, 0}, {"x", 0}}},
		{"a line longer than the read buffer is dropped over the bound", long + "\nx\n", readChunk, []readLine{{"", len(long)}, {"x", 0}}},
		{"a dropped last line without a newline is measured", "ok\n" + long, 100, []readLine{{"ok", 0}, {"", len(long)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// One byte per read: a line arrives in pieces, as from a pipe.
			r := newLineReader(iotest.OneByteReader(strings.NewReader(tt.input)), tt.max)
			var got []readLine
			for {
				line, dropped, err := r.next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, readLine{string(line), dropped})
			}
			if len(got) != len(tt.want) {
				t.Fatalf("read %d lines, want %d", len(got), len(tt.want))
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("line %d = %.20q (dropped %d), want %.20q (dropped %d)", i, got[i].line, got[i].dropped, tt.want[i].line, tt.want[i].dropped)
				}
			}
		})
	}
}

func TestLineReaderNeverHoldsMoreThanTheBound(t *testing.T) {
	t.Parallel()
	const max = 1000
	r := newLineReader(strings.NewReader(strings.Repeat("z", 10*readChunk)+"\n"), max)
	if _, dropped, err := r.next(); err != nil || dropped != 10*readChunk {
		t.Fatalf("next = %d, %v", dropped, err)
	}
	if cap(r.buf) > max {
		t.Errorf("the reader grew to %d bytes for a dropped line; the bound is %d", cap(r.buf), max)
	}
}

func TestDecode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, line string
		typ        string
		err        error
	}{
		{"an object with a type", `{"type":"log","text":"hi"}`, "log", nil},
		{"surrounding whitespace and a carriage return", " {\"type\":\"reply\"}\r", "reply", nil},
		{"an array", `[1]`, "", errNotObject},
		{"null", `null`, "", errNotObject},
		{"a broken object", `{"type":`, "", errNotObject},
		{"no type", `{"id":1}`, "", errNoType},
		{"a type that is not a string", `{"type":3}`, "", errNoType},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := decode([]byte(tt.line))
			if !errors.Is(err, tt.err) || (err == nil && m.typ != tt.typ) {
				t.Errorf("decode = %q, %v; want %q, %v", m.typ, err, tt.typ, tt.err)
			}
		})
	}
}

// FuzzDecode: any line from a backend either decodes into a message with a
// type, whose compact form is valid JSON and whose fields read back as
// valid UTF-8 text, or is refused with one of the two faults — never a
// panic.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		`{"type":"reply","id":1,"result":{"ok":true}}`,
		`{"type":"reply","id":2,"error":"boom"}`,
		`{"type":"log","text":"\u00e9\ud800"}`,
		`{"type":"notice","text":"x","level":"info"}`,
		`{"type":"fault","text":"` + strings.Repeat("a", 100) + `"}`,
		`{"type":3}`, `[1]`, `null`, "{\"type\":\"view\"}\r", `{"type":"reply","id":1e400}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := decode(line)
		if err != nil {
			if !errors.Is(err, errNotObject) && !errors.Is(err, errNoType) {
				t.Fatalf("decode(%q) = %v, not one of the two faults", line, err)
			}
			return
		}
		if !json.Valid(m.line) {
			t.Fatalf("decode(%q) kept %q, which is not valid JSON", line, m.line)
		}
		for k := range m.fields {
			if s := m.text(k); !utf8.ValidString(s) {
				t.Fatalf("field %q of %q reads back as invalid UTF-8 %q", k, line, s)
			}
		}
		m.id()
	})
}
