package streams

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/switchboard-run/switchboard/kit/suite/natsconn"
)

// bounded is a bucket whose requests are each bounded by
// natsconn.RequestTimeout (natsconn.Request): a caller of the suite hears
// that NATS did not answer, in time, rather than waiting out its own
// deadline. Watches and listings are not requests and keep their context.
type bounded struct {
	jetstream.KeyValue
}

func (b bounded) Get(ctx context.Context, key string) (e jetstream.KeyValueEntry, err error) {
	err = natsconn.Request(ctx, func(ctx context.Context) error { e, err = b.KeyValue.Get(ctx, key); return err })
	return e, err
}

func (b bounded) GetRevision(ctx context.Context, key string, revision uint64) (e jetstream.KeyValueEntry, err error) {
	err = natsconn.Request(ctx, func(ctx context.Context) error { e, err = b.KeyValue.GetRevision(ctx, key, revision); return err })
	return e, err
}

func (b bounded) Put(ctx context.Context, key string, value []byte) (rev uint64, err error) {
	err = natsconn.Request(ctx, func(ctx context.Context) error { rev, err = b.KeyValue.Put(ctx, key, value); return err })
	return rev, err
}

func (b bounded) PutString(ctx context.Context, key string, value string) (uint64, error) {
	return b.Put(ctx, key, []byte(value))
}

func (b bounded) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (rev uint64, err error) {
	err = natsconn.Request(ctx, func(ctx context.Context) error { rev, err = b.KeyValue.Create(ctx, key, value, opts...); return err })
	return rev, err
}

func (b bounded) Update(ctx context.Context, key string, value []byte, revision uint64) (rev uint64, err error) {
	err = natsconn.Request(ctx, func(ctx context.Context) error { rev, err = b.KeyValue.Update(ctx, key, value, revision); return err })
	return rev, err
}

func (b bounded) Delete(ctx context.Context, key string, opts ...jetstream.KVDeleteOpt) error {
	return natsconn.Request(ctx, func(ctx context.Context) error { return b.KeyValue.Delete(ctx, key, opts...) })
}

func (b bounded) Purge(ctx context.Context, key string, opts ...jetstream.KVDeleteOpt) error {
	return natsconn.Request(ctx, func(ctx context.Context) error { return b.KeyValue.Purge(ctx, key, opts...) })
}

func (b bounded) Status(ctx context.Context) (st jetstream.KeyValueStatus, err error) {
	err = natsconn.Request(ctx, func(ctx context.Context) error { st, err = b.KeyValue.Status(ctx); return err })
	return st, err
}
