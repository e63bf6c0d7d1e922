package jsbox

import (
	"context"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// Depths returns how many invocations wait in each client's queue — queued
// or handed without an answer yet — as the stream holds them: the same
// figure on every replica, read from the NATS servers at each call.
func (b *Box) Depths(ctx context.Context) (map[string]int, error) {
	info, err := b.queue.Info(ctx, jetstream.WithSubjectFilter(queuePrefix+"*"))
	if err != nil {
		return nil, err
	}
	out := make(map[string]int, len(info.State.Subjects))
	for subject, n := range info.State.Subjects {
		if subject == anchorSubject {
			continue
		}
		out[strings.TrimPrefix(subject, queuePrefix)] = int(n)
	}
	return out, nil
}
