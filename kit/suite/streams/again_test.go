package streams

import (
	"context"
	"errors"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// A cluster still forming answers "no suitable peers" for a moment: a
// declaration waits it out instead of failing the start, and still gives
// up on an error that is final.
func TestDeclarationWaitsForAClusterToForm(t *testing.T) {
	noPeersYet := &jetstream.APIError{Code: 400, ErrorCode: noPeers, Description: "no suitable peers for placement, peer offline"}
	tries := 0
	got, err := again(context.Background(), func() (string, error) {
		if tries++; tries < 3 {
			return "", noPeersYet
		}
		return "made", nil
	})
	if err != nil || got != "made" || tries != 3 {
		t.Fatalf("again = %q, %v after %d tries; want made after 3", got, err, tries)
	}
	final := &jetstream.APIError{Code: 400, ErrorCode: jetstream.JSErrCodeBadRequest, Description: "bad request"}
	tries = 0
	if _, err := again(context.Background(), func() (string, error) { tries++; return "", final }); !errors.Is(err, final) || tries != 1 {
		t.Fatalf("a final error: %v after %d tries; want it at once", err, tries)
	}
}
