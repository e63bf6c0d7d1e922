package upstream

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// The tap hears each log message of a stream, however the reads cut it,
// and nothing else: not a reply, not a request of that name, not an event
// past the bound.
func TestTheTapHearsEachLogMessageOfAStream(t *testing.T) {
	t.Parallel()
	stream := "event: message\r\nid: 1\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"one\"}}\r\n\r\n" +
		": a comment\n" +
		"data: {\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"notifications/message\",\"params\":{}}\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\n" +
		"data: \"params\":{\"level\":\"debug\",\"data\":{\"n\":2}}}\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"data\":\"" + strings.Repeat("x", maxTappedEvent) + "\"}}\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}\n\n"
	for _, size := range []int{1, 7, 4096, len(stream)} {
		var heard []string
		tap := &logTap{body: io.NopCloser(strings.NewReader(stream)), hear: func(p json.RawMessage) { heard = append(heard, string(p)) }}
		buf := make([]byte, size)
		var read strings.Builder
		for {
			n, err := tap.Read(buf)
			read.Write(buf[:n])
			if err != nil {
				break
			}
		}
		want := []string{`{"level":"info","data":"one"}`, `{"level":"debug","data":{"n":2}}`}
		if read.String() != stream || len(heard) != 2 || heard[0] != want[0] || heard[1] != want[1] {
			t.Fatalf("reads of %d: heard %q; want %q, the stream passed through whole", size, heard, want)
		}
	}
}
