package jsbox_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/switchboard-run/switchboard/kit/logging"
	"github.com/switchboard-run/switchboard/kit/natsserver"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/jsbox"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/storetest"
)

func config(b storetest.Bounds, replicas int) jsbox.Config {
	return jsbox.Config{TTL: b.TTL, Lease: 30 * time.Second, MaxQueued: b.MaxQueued, MaxSlots: 10_000,
		MaxCaptureBytes: b.MaxCaptureBytes, Replicas: replicas}
}

// oneNodeBox is a box within b on a one-node server of its own, in
// process, with its connection; both end with the test.
func oneNodeBox(t testing.TB, b storetest.Bounds) (*jsbox.Box, *nats.Conn) {
	t.Helper()
	return oneNodeBoxWith(t, config(b, 1))
}

// oneNodeBoxWith is oneNodeBox with the box configured by cfg.
func oneNodeBoxWith(t testing.TB, cfg jsbox.Config) (*jsbox.Box, *nats.Conn) {
	t.Helper()
	s, err := natsserver.Start(natsserver.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	nc, err := nats.Connect("", s.InProcess())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	box, err := jsbox.New(context.Background(), nc, cfg, logging.Discard())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(box.Close)
	return box, nc
}

// TestOnOneNode runs the conformance suite with a server of its own per
// test, in parallel.
func TestOnOneNode(t *testing.T) {
	storetest.Run(t, func(t *testing.T, b storetest.Bounds) inflight.Store {
		box, _ := oneNodeBox(t, b)
		return box
	}, true)
}

// TestOnAThreeNodeCluster runs the suite against R3 streams, one test after
// another on one cluster, each with the stream and bucket made anew.
func TestOnAThreeNodeCluster(t *testing.T) {
	nodes, err := natsserver.StartCluster(t.TempDir(), "mailbox", 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			n.Shutdown()
		}
	})
	storetest.Run(t, func(t *testing.T, b storetest.Bounds) inflight.Store {
		// Connected to one node: the stream's leader may be any of them.
		nc, err := nats.Connect(nodes[len(t.Name())%3].ClientURL())
		if err != nil {
			t.Fatal(err)
		}
		js, _ := jetstream.New(nc)
		box, err := jsbox.New(context.Background(), nc, config(b, 3), logging.Discard())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			box.Close()
			// The next test declares both anew, with its own bounds: what is
			// left of this one (its consumers, its slots) must be gone.
			ctx := context.Background()
			for _, name := range []string{jsbox.QueueStream, "KV_" + jsbox.SlotBucket} {
				testkit.Eventually(t, "the stream "+name+" deleted", 30*time.Second, func() bool {
					err := js.DeleteStream(ctx, name)
					return err == nil || errors.Is(err, jetstream.ErrStreamNotFound)
				})
			}
			nc.Close()
		})
		return box
	}, false)
}
