package box_test

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/switchboard-run/switchboard/kit/suite/natsserver"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/box"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/storetest"
)

var ctx = context.Background()

// config is a box's configuration for a test with bounds b.
func config(b storetest.Bounds, replicas int) box.Config {
	return box.Config{TTL: b.TTL, MaxQueued: b.MaxQueued, MaxSlots: 1_000_000, MaxCaptureBytes: b.MaxCaptureBytes,
		MaxQueueBytes: 1 << 30, Replicas: replicas, PresenceTTL: 3 * time.Second}
}

// replica opens one mailbox replica's box on a connection of its own to
// url, closed when the test ends. Closing its connection first is the
// replica dying.
func replica(t *testing.T, url string, b storetest.Bounds, replicas int) (*box.Box, *nats.Conn) {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	bx, err := box.New(ctx, nc, config(b, replicas), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !nc.IsClosed() {
			bx.Close()
		}
		nc.Close()
	})
	return bx, nc
}

func TestTheBoxKeepsTheRulesOnOneNode(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, b storetest.Bounds) inflight.Store {
		bx, _ := replica(t, testkit.NATS(t).ClientURL(), b, 1)
		return bx
	}, true)
}

func TestTheBoxKeepsTheRulesOnAThreeNodeCluster(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a three-node cluster: not in -short")
	}
	nodes := testkit.NATSCluster(t, 3)
	url := testkit.URLs(nodes)
	storetest.Run(t, func(t *testing.T, b storetest.Bounds) inflight.Store {
		bx, _ := replica(t, url, b, 3)
		t.Cleanup(func() { clearStreams(t, nodes) })
		return bx
	}, false)
}

// clearStreams deletes the box's streams on a cluster, so that the next
// test meets none of this one's records.
func clearStreams(t *testing.T, nodes []*natsserver.Server) {
	t.Helper()
	js := testkit.JetStream(t, testkit.URLs(nodes))
	for k := range box.Partitions {
		testkit.Eventually(t, "a test's stream to be deleted", 30*time.Second, func() bool {
			err := js.DeleteStream(ctx, box.StreamPrefix+strconv.Itoa(k))
			return err == nil || errors.Is(err, jetstream.ErrStreamNotFound)
		})
	}
}
