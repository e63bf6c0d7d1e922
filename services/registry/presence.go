package registry

import (
	"context"
	"errors"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/switchboard-run/switchboard/kit/suite/presence"
	"github.com/switchboard-run/switchboard/kit/suite/streams"
)

// presenceBucket is the presence bucket as the registry reads it. The
// mailbox declares and writes it; the registry may only read it
// (docs/security.md, "NATS"), and may start first (compose starts it
// before the mailbox): until a mailbox has declared the bucket, nobody
// holds a read.
type presenceBucket struct {
	js jetstream.JetStream

	mu sync.Mutex
	kv jetstream.KeyValue
}

// get is the bucket; nil, with no error, while no mailbox has declared it.
func (p *presenceBucket) get(ctx context.Context) (jetstream.KeyValue, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.kv != nil {
		return p.kv, nil
	}
	kv, err := streams.Bind(ctx, p.js, presence.Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	p.kv = kv
	return kv, nil
}

// current is client's read as the bucket holds it (nil: none).
func (p *presenceBucket) current(ctx context.Context, client string) (*presence.Read, error) {
	kv, err := p.get(ctx)
	if kv == nil || err != nil {
		return nil, err
	}
	return presence.Current(ctx, kv, client)
}
