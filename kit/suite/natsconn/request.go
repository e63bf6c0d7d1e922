package natsconn

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// RequestTimeout bounds one request to NATS made on behalf of a caller. An
// answer lost with a node that went away, or a NATS that is gone, would
// otherwise hold the caller until its own deadline (or, without one, for
// as long as the client library's default), and the caller would hear a
// bare deadline instead of why.
const RequestTimeout = 5 * time.Second

// ErrNoAnswer is the error of a request NATS did not answer within
// RequestTimeout.
var ErrNoAnswer = fmt.Errorf("NATS did not answer within %v", RequestTimeout)

// Request runs f — one request to NATS, or a few in a row — with ctx
// bounded by RequestTimeout. The bound running out while ctx still lives is
// ErrNoAnswer, not a context error: the deadline was not the caller's, so a
// refusal built from it must say that NATS did not answer. The caller's own
// deadline or cancel comes back as it is.
func Request(ctx context.Context, f func(context.Context) error) error {
	bounded, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	err := f(bounded)
	if err != nil && ctx.Err() == nil && errors.Is(bounded.Err(), context.DeadlineExceeded) {
		return ErrNoAnswer
	}
	return err
}
