package streams

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// Watch calls on for every key of kv as it stands, then synced once, then
// on for every change in the bucket's order, until ctx ends (its error) or
// the watch fails (an error naming the bucket). Deletes and purges reach
// on as entries of their operation.
func Watch(ctx context.Context, kv jetstream.KeyValue, on func(jetstream.KeyValueEntry), synced func()) error {
	w, err := kv.WatchAll(ctx)
	if err != nil {
		return fmt.Errorf("watching %s: %w", kv.Bucket(), err)
	}
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case e, ok := <-w.Updates():
			switch {
			case !ok:
				return fmt.Errorf("the watch of %s ended", kv.Bucket())
			case e == nil: // the end of what the bucket held
				synced()
			default:
				on(e)
			}
		}
	}
}
