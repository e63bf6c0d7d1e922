package stdio

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// lineSeeds are lines a server could write, well formed or not.
var lineSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}`,
	`{"jsonrpc":"2.0","id":"abc","result":{}}`,
	`{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"no such method","data":{"x":1}}}`,
	`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}`,
	`{"jsonrpc":"2.0","id":3,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":4,"method":""}`,
	`{"jsonrpc":"2.0","id":5,"method":null}`,
	`{"jsonrpc":"2.0","id":6,"Method":"ping"}`,
	`{"jsonrpc":"2.0","ID":7,"result":{}}`,
	`{"jsonrpc":"1.0","id":1,"result":{}}`,
	`{"jsonrpc":2,"id":1,"result":{}}`,
	`{"jsonrpc":"2.0","id":true,"result":{}}`,
	`{"jsonrpc":"2.0","result":{}}`,
	`{"jsonrpc":"2.0","id":1.5,"result":"a \"quoted\" } string ]"}`,
	`{"jsonrpc":"2.0","id":1,"method":5}`,
	`{"jsonrpc":"2.0","id":1,"result":{}`,
	`not JSON at all`,
	`"a string"`,
	`null`,
	`{}`,
	`{"jsonrpc":"2.0","id":1,"result":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + `}`,
	`{"jsonrpc":"2.0","id":1,"result":` + strings.Repeat("[", 999) + strings.Repeat("]", 999) + `}`,
}

// decodeLine gives what the SDK's own decoder gives, message for message
// and error for error.
func TestDecodeLineAgreesWithTheSDK(t *testing.T) {
	t.Parallel()
	for _, line := range lineSeeds {
		agree(t, []byte(line))
	}
}

func FuzzDecodeLineAgreesWithTheSDK(f *testing.F) {
	for _, line := range lineSeeds {
		f.Add([]byte(line))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		line = trimSpace(line)
		if len(line) == 0 || line[0] == '[' || bytes.IndexByte(line, '\n') >= 0 {
			return // not one message on one line
		}
		agree(t, line)
	})
}

func agree(t *testing.T, line []byte) {
	t.Helper()
	got, err := decodeLine(line)
	if errors.Is(err, errTrailing) {
		return // the SDK's connection refuses it; its DecodeMessage alone would not
	}
	want, wantErr := jsonrpc.DecodeMessage(line)
	switch {
	case (err == nil) != (wantErr == nil):
		t.Errorf("%.80s: error %v, the SDK's %v", line, err, wantErr)
	case err != nil && err.Error() != wantErr.Error():
		t.Errorf("%.80s: error %q, the SDK's %q", line, err, wantErr)
	case !reflect.DeepEqual(got, want):
		t.Errorf("%.80s: %#v, the SDK's %#v", line, got, want)
	}
}

// A second value on a line is refused, as the SDK's connection does.
func TestTrailingDataIsRefused(t *testing.T) {
	t.Parallel()
	for _, line := range []string{`{"jsonrpc":"2.0","id":1,"result":{}} x`, `{"jsonrpc":"2.0","id":1,"result":{}}{}`} {
		if _, err := decodeLine([]byte(line)); !errors.Is(err, errTrailing) {
			t.Errorf("%s: error %v, want %v", line, err, errTrailing)
		}
	}
}

func TestBatches(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, line, err string
		n               int
	}{
		{name: "a batch of a request and a notification", n: 2,
			line: `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`},
		{name: "an empty batch", line: `[]`, err: "empty batch"},
		{name: "a batch with a bad member", line: `[{"jsonrpc":"1.0","id":1,"result":{}}]`, err: "in a batch: invalid message version tag"},
		{name: "a batch with trailing data", line: `[{"jsonrpc":"2.0","id":1,"result":{}}] x`, err: errTrailing.Error()},
		{name: "an unclosed batch", line: `[{"jsonrpc":"2.0","id":1,"result":{}}`, err: "unmarshaling jsonrpc message"},
		{name: "a batch nested too deep", line: `[` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + `]`, err: "nesting depth"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			msgs, err := decodeBatch([]byte(tc.line))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil || len(msgs) != tc.n {
				t.Fatalf("%d messages, error %v; want %d", len(msgs), err, tc.n)
			}
		})
	}
}
