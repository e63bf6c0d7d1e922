package contract

import (
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
)

func TestARefusalCarriesItsReason(t *testing.T) {
	t.Parallel()
	err := Refusal(status.New(codes.FailedPrecondition, "read already"), ReasonSecondReader)
	if ReasonOf(err) != ReasonSecondReader || status.Code(err) != codes.FailedPrecondition || status.Convert(err).Message() != "read already" {
		t.Fatalf("Refusal = %v (reason %q)", err, ReasonOf(err))
	}
	for _, other := range []error{status.Error(codes.FailedPrecondition, "read already"), errors.New("x"), nil} {
		if r := ReasonOf(other); r != "" {
			t.Errorf("ReasonOf(%v) = %q; want none", other, r)
		}
	}
}

// Notes go into a trailer and come out as they went; no notes send no
// trailer, and a trailer that does not decode reads as none.
func TestNotesTravelInATrailer(t *testing.T) {
	t.Parallel()
	notes := []*mailboxv1.ProgressNote{{Seq: 1, Progress: 2, Message: "half"}, {Seq: 2, Log: &mailboxv1.LogMessage{Level: "info", Data: `"x"`}}}
	got := Notes(NotesMD(notes))
	if len(got) != 2 || !proto.Equal(got[0], notes[0]) || !proto.Equal(got[1], notes[1]) {
		t.Fatalf("Notes(NotesMD(notes)) = %v", got)
	}
	if md := NotesMD(nil); md != nil {
		t.Errorf("NotesMD(nil) = %v; want no trailer", md)
	}
	if got := Notes(metadata.Pairs(NotesTrailer, "\xff\xff")); got != nil {
		t.Errorf("Notes of a bad trailer = %v; want none", got)
	}
}

func TestCheckIdempotencyKey(t *testing.T) {
	t.Parallel()
	for key, want := range map[string]string{
		"":                        "idempotency key: 0 bytes; a key is 1 to 255 bytes of visible ASCII",
		"a b":                     `idempotency key "a b": byte 1 (0x20) is not visible ASCII (! to ~)`,
		string(make([]byte, 256)): "idempotency key: 256 bytes; a key is 1 to 255 bytes of visible ASCII",
		"order-42":                "",
	} {
		err := CheckIdempotencyKey(key)
		if (want == "") != (err == nil) || (err != nil && status.Convert(err).Message() != want) {
			t.Errorf("CheckIdempotencyKey(%.10q) = %v; want %q", key, err, want)
		}
	}
}
