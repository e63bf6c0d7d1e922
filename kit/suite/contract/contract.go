// Package contract is the mailbox's wire contract beyond its protobuf
// messages: the metadata names its calls carry and the refusal reasons
// other services act on (typed, never read from a sentence). The mailbox
// and every driver and host take them from here.
package contract

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// InvocationHeader is the response header in which Call names the
// invocation's handle as soon as the call is accepted, before it is posted.
const InvocationHeader = "switchboard-invocation"

// RefusedTrailer marks a Call that named its handle and then failed by the
// mailbox's own answer, as against a connection that broke.
const RefusedTrailer = "switchboard-refused"

// IdempotencyKey is the request metadata in which a driver names its
// idempotency key on Invoke and Call (HTTP fronts: the Idempotency-Key
// header): for the mailbox's --ttl, a retry with it returns the handle, or
// the capture, of the key's first use, and never runs the tool again.
const IdempotencyKey = "idempotency-key"

// MaxIdempotencyKeyBytes bounds one idempotency key, as HTTP APIs that take
// the header do.
const MaxIdempotencyKeyBytes = 255

// CheckIdempotencyKey refuses a key that is not 1–255 bytes of visible
// ASCII, naming what is wrong with it.
func CheckIdempotencyKey(key string) error {
	if key == "" || len(key) > MaxIdempotencyKeyBytes {
		return status.Errorf(codes.InvalidArgument, "idempotency key: %d bytes; a key is 1 to %d bytes of visible ASCII", len(key), MaxIdempotencyKeyBytes)
	}
	for i := range len(key) {
		if c := key[i]; c < 0x21 || c > 0x7e {
			return status.Errorf(codes.InvalidArgument, "idempotency key %q: byte %d (%#x) is not visible ASCII (! to ~)", key, i, c)
		}
	}
	return nil
}
