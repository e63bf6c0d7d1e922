package mailboxcall

import (
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/switchboard-run/switchboard/kit/suite/contract"
)

func TestBrokenTellsABrokenConnectionFromTheMailboxsAnswer(t *testing.T) {
	refused := metadata.Pairs(contract.RefusedTrailer, "1")
	for _, c := range []struct {
		name    string
		err     error
		trailer metadata.MD
		want    bool
	}{
		{"connection broke", status.Error(codes.Unavailable, "error reading from server: EOF"), nil, true},
		{"the mailbox cannot reach NATS", status.Error(codes.Unavailable, "the mailbox cannot reach NATS right now"), refused, false},
		{"refused otherwise", status.Error(codes.ResourceExhausted, "the queue is full"), refused, false},
		{"timed out", status.Error(codes.DeadlineExceeded, "deadline"), nil, false},
		{"not a status", errors.New("boom"), nil, false},
	} {
		if got := Broken(c.err, c.trailer); got != c.want {
			t.Errorf("%s: Broken = %v; want %v", c.name, got, c.want)
		}
	}
	if id := Handle(metadata.Pairs(contract.InvocationHeader, "inv-1")); id != "inv-1" {
		t.Errorf("Handle = %q; want inv-1", id)
	}
	if id := Handle(nil); id != "" {
		t.Errorf("Handle of no header = %q; want none", id)
	}
}
