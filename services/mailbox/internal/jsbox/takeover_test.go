package jsbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/switchboard-run/switchboard/kit/logging"
	"github.com/switchboard-run/switchboard/kit/natsserver"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/jsbox"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/storetest"
)

// A replica dies while it holds a client's read: its connection drops and
// its read never closes (nothing unpins the consumer). The read the client
// opens on another replica gets what is posted next at once, not after the
// dead read's pin has timed out (a whole lease).
func TestAReadOpenedAfterAReplicaDiedIsServedAtOnce(t *testing.T) {
	t.Parallel()
	s, err := natsserver.Start(natsserver.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	replica := func() (*jsbox.Box, *nats.Conn) {
		nc, err := nats.Connect("", s.InProcess())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		box, err := jsbox.New(context.Background(), nc, config(storetest.Bounds{TTL: time.Hour, MaxQueued: 100, MaxCaptureBytes: 1 << 20}, 1), logging.Discard())
		if err != nil {
			t.Fatal(err)
		}
		return box, nc
	}
	ctx := context.Background()
	post := func(box *jsbox.Box) string {
		id := inflight.NewID()
		if err := box.Post(ctx, inflight.Post{ID: id, Client: "laptop", Poster: "driver", Tool: "echo", Input: "{}"}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	lease := config(storetest.Bounds{}, 1).Lease
	dying, dyingConn := replica()
	held, err := dying.OpenRead(ctx, "laptop")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(held.Close)
	// Handed one invocation: the dying read's pull requests hold the pin.
	handed(t, held, post(dying), lease/3)
	dyingConn.Close() // the replica dies: its read is never closed, nothing unpins

	survivor, _ := replica()
	read, err := survivor.OpenRead(ctx, "laptop")
	if err != nil {
		t.Fatal(err)
	}
	defer read.Close()
	handed(t, read, post(survivor), lease/3)
}
