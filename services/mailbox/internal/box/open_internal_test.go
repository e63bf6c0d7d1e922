package box

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// openBox is a replica of the box on the NATS at url (one URL or a
// cluster's list), keeping replicas copies; closed with the test.
func openBox(t *testing.T, url string, replicas int) *Box {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	b, err := New(context.Background(), nc, Config{TTL: time.Hour, MaxQueued: 100, MaxSlots: 1000, MaxCaptureBytes: 1 << 20,
		MaxQueueBytes: 1 << 30, Replicas: replicas, PresenceTTL: 3 * time.Second}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}
