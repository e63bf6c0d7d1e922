package act

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/services/gateway/internal/httperr"
)

// A backend answer the shapes cannot carry is refused (502) rather than
// written as broken JSON or with a field made up.
func TestEncodeRefusesWhatTheShapesCannotCarry(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		encode func() ([]byte, error)
		want   string
	}{
		{"an input that is not JSON", func() ([]byte, error) {
			return EncodeInvocations(&mailboxv1.InvocationsResponse{Rows: []*mailboxv1.Invocation{{Invocation: "inv-1", Tool: "t", Input: "{"}}})
		}, `the input of invocation "inv-1" is not JSON`},
		{"an empty input", func() ([]byte, error) {
			return EncodeInvocations(&mailboxv1.InvocationsResponse{Rows: []*mailboxv1.Invocation{{Invocation: "inv-1", Tool: "t"}}})
		}, `the input of invocation "inv-1" is not JSON`},
		{"a capture without stdout", func() ([]byte, error) {
			return EncodeReceipt("inv-1", &mailboxv1.Capture{Stderr: proto.String(""), ExitCode: proto.Int32(0)})
		}, `the mailbox answered invocation "inv-1" with a capture without stdout`},
		{"a capture without exit_code", func() ([]byte, error) {
			return EncodeReceipt("inv-1", &mailboxv1.Capture{Stdout: proto.String(""), Stderr: proto.String("")})
		}, `the mailbox answered invocation "inv-1" with a capture without exit_code`},
		{"a schema that is not JSON", func() ([]byte, error) {
			return EncodeClients(&registryv1.ListClientsResponse{Rows: []*registryv1.ClientRow{{Client: "laptop", Tools: []*registryv1.Tool{{Name: "grep", InputSchema: "nope"}}}}})
		}, `the input_schema of tool "grep" of client "laptop" is not JSON`},
		{"annotations that are not JSON", func() ([]byte, error) {
			return EncodeClients(&registryv1.ListClientsResponse{Rows: []*registryv1.ClientRow{{Client: "laptop", Tools: []*registryv1.Tool{{Name: "grep", InputSchema: "{}", Annotations: proto.String("")}}}}})
		}, `the annotations of tool "grep" of client "laptop" is not JSON`},
		{"a last_seen out of range", func() ([]byte, error) {
			return EncodeClients(&registryv1.ListClientsResponse{Rows: []*registryv1.ClientRow{{Client: "laptop", LastSeen: &timestamppb.Timestamp{Seconds: -1 << 62}}}})
		}, ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, err := tc.encode()
			var he *httperr.Error
			if !errors.As(err, &he) || he.Status != 502 {
				t.Fatalf("encode = %s, %v; want a 502 refusal", b, err)
			}
			if tc.want != "" && he.Sentence != tc.want {
				t.Fatalf("sentence %q, want %q", he.Sentence, tc.want)
			}
		})
	}
}
