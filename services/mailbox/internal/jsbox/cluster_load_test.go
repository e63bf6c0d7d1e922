package jsbox_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/switchboard-run/switchboard/kit/logging"
	"github.com/switchboard-run/switchboard/kit/natsserver"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/jsbox"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/storetest"
)

// TestManyCallsOnACluster: concurrent calls through two boxes (two
// replicas) on a three-node cluster, one read answering them all.
func TestManyCallsOnACluster(t *testing.T) {
	nodes, err := natsserver.StartCluster(t.TempDir(), "load", 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, n := range nodes {
			n.Shutdown()
		}
	}()
	var urls []string
	for _, n := range nodes {
		urls = append(urls, n.ClientURL())
	}
	ctx := context.Background()
	var boxes []*jsbox.Box
	for range 2 {
		nc, err := nats.Connect(strings.Join(urls, ","))
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		// A queue bound well above the calls in flight: a client's count
		// holds an answered invocation until its acknowledgement reaches
		// the stream, which on a cluster is a moment later.
		bounds := storetest.Defaults
		bounds.MaxQueued = 10_000
		b, err := jsbox.New(ctx, nc, config(bounds, 3), logging.Discard())
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		boxes = append(boxes, b)
	}
	r, err := boxes[0].OpenRead(ctx, "laptop")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	go func() {
		for {
			select {
			case <-r.Wake():
			case <-r.Ended():
				return
			}
			invs, _ := r.Take(true, storetest.Roomy())
			for _, inv := range invs {
				go func() {
					if _, err := boxes[0].Complete(ctx, "laptop", inv.ID, inflight.Capture{Stdout: inv.Input}); err != nil {
						t.Errorf("complete: %v", err)
					}
				}()
			}
		}
	}()
	// A stream just declared on a cluster may not answer until its
	// replicas have elected a leader ("try again in a moment"): wait until
	// each box has made one call before the load begins.
	for i, b := range boxes {
		testkit.Eventually(t, fmt.Sprintf("box %d to make a call", i), 30*time.Second, func() bool {
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			c, err := b.Call(ctx, wctx, inflight.Post{ID: inflight.NewID(), Client: "laptop", Poster: "driver", Tool: "echo", Input: "{}"})
			return err == nil && c != nil && c.Stdout == "{}"
		})
	}
	var wg sync.WaitGroup
	for d := range 64 {
		wg.Go(func() {
			for n := range 30 {
				input := fmt.Sprintf(`{"d":%d,"n":%d}`, d, n)
				wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
				c, err := boxes[d%2].Call(ctx, wctx, inflight.Post{ID: inflight.NewID(), Client: "laptop", Poster: "driver", Tool: "echo", Input: input})
				cancel()
				if err != nil || c == nil || c.Stdout != input {
					t.Errorf("call %s: %v %v", input, c, err)
					return
				}
			}
		})
	}
	wg.Wait()
}
