package rest

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
)

func TestMarshalerWritesTheContractsBytes(t *testing.T) {
	t.Parallel()
	m := NewMarshaler()
	for _, tc := range []struct {
		name string
		msg  proto.Message
		want string
	}{
		{"a running capture has no capture key", &mailboxv1.CaptureResponse{Invocation: "inv-1"}, `{"invocation":"inv-1"}`},
		{"zero values of a capture are printed", &mailboxv1.CaptureResponse{Invocation: "inv-1",
			Capture: &mailboxv1.Capture{Stdout: proto.String(""), Stderr: proto.String(""), ExitCode: proto.Int32(0)}},
			`{"invocation":"inv-1","capture":{"stdout":"","stderr":"","exit_code":0}}`},
		{"names are snake_case and absent optionals stay absent", &registryv1.Tool{Name: "grep", InputSchema: `{"type": "object"}`},
			`{"name":"grep","description":"","input_schema":"{\"type\": \"object\"}"}`},
		{"JSON text keeps its spacing inside its string", &mailboxv1.Invocation{Invocation: "inv-1", Tool: "t", Input: `[1, 2.0 , "a b"]`, Cwd: proto.String("/x y")},
			`{"invocation":"inv-1","tool":"t","input":"[1, 2.0 , \"a b\"]","cwd":"/x y","delivery":0,"trace_context":{}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, err := m.Marshal(tc.msg)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Fatalf("Marshal = %s, want %s", b, tc.want)
			}
			var buf bytes.Buffer
			if err := m.NewEncoder(&buf).Encode(tc.msg); err != nil {
				t.Fatal(err)
			}
			if buf.String() != tc.want+"\n" {
				t.Fatalf("Encode = %q, want %q", buf.String(), tc.want+"\n")
			}
		})
	}
}
