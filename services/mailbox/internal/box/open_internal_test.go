package box

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/storetest"
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

// callOn makes a Call of laptop's echo on b under id, waiting a minute at
// most; its answer arrives on the channel.
func callOn(t *testing.T, b *Box, id string) <-chan *Capture {
	answered := make(chan *Capture, 1)
	go func() {
		wait, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c, err := b.Call(context.Background(), wait, inflight.Post{ID: id, Client: "laptop", Poster: "driver", Tool: "echo", Input: `{}`})
		if err != nil {
			t.Errorf("the call %s: %v", id, err)
		}
		answered <- c
	}()
	return answered
}

// laptopRead opens laptop's read on b, closed with the test at the latest.
func laptopRead(t *testing.T, b *Box) inflight.Read {
	t.Helper()
	r, err := b.OpenRead(context.Background(), "laptop", "s")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// answerThroughRead opens laptop's read on b, waits for it to hand out id,
// and answers it with stdout.
func answerThroughRead(t *testing.T, b *Box, id, stdout string) {
	t.Helper()
	r := laptopRead(t, b)
	defer r.Close()
	awaitHanded(t, r, id)
	if _, err := b.Complete(context.Background(), "laptop", id, Capture{Stdout: stdout}); err != nil {
		t.Fatal(err)
	}
}

// awaitHanded takes from r until it hands out id.
func awaitHanded(t *testing.T, r inflight.Read, id string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		got, _ := r.Take(true, storetest.Roomy())
		for _, inv := range got {
			if inv.ID == id {
				return
			}
		}
		select {
		case <-r.Wake():
		case <-deadline:
			t.Fatalf("%s was never handed out", id)
		}
	}
}
