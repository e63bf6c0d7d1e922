// Package soak runs many drivers against many hosts for a bounded time and
// checks that nothing is lost and nothing is left behind.
package soak

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/switchboard-run/switchboard/cli/dev"
	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/lib/logging"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
	"github.com/switchboard-run/switchboard/kit/suite/grpcclient"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/mailbox"
	"github.com/switchboard-run/switchboard/tests/internal/procs"
)

// soaking reports whether this is the long form (`make soak`).
func soaking() bool { return os.Getenv("SWITCHBOARD_SOAK") != "" }

// duration is 10 s in `make test`; `make soak` sets SWITCHBOARD_SOAK.
func duration(t *testing.T) time.Duration {
	if v := os.Getenv("SWITCHBOARD_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("SWITCHBOARD_SOAK=%q: %v", v, err)
		}
		return d
	}
	return 10 * time.Second
}

// TestDriversAndHostsLoseNothing runs the embedded suite in process with M
// hosts on Follow streams and N drivers calling as fast as they can. Every
// call must come back with its own input as the capture, or with an
// explicit refusal; after the drain the mailbox holds nothing, the
// goroutine count is back where it was, and the heap where the first half
// of the load left it.
func TestDriversAndHostsLoseNothing(t *testing.T) {
	const drivers, hosts = 32, 8
	addr, _ := procs.RunDev(t, dev.Options{DataDir: t.TempDir(), Secret: "soak-secret",
		Mailbox: mailbox.Bounds{TTL: time.Hour, MaxQueued: 10_000, MaxSlots: 1_000_000, MaxCaptureBytes: 1 << 20},
		Log:     logging.Discard()})
	conn, err := grpcclient.Dial(addr, nil, grpc.WithPerRPCCredentials(identity.DevSecret("soak-secret")))
	if err != nil {
		t.Fatal(err)
	}
	reg, mb := registryv1.NewRegistryServiceClient(conn), mailboxv1.NewMailboxServiceClient(conn)
	dctx := testkit.As("driver", identity.Driver)

	hostsCtx, stopHosts := context.WithCancel(context.Background())
	var hostsWG sync.WaitGroup
	for i := range hosts {
		client := fmt.Sprintf("soak-%d", i)
		if err := serveHost(hostsCtx, &hostsWG, reg, mb, client); err != nil {
			t.Fatal(err)
		}
		// Present in the registry: the mailbox's presence stream is up, and
		// one call proves the whole path warm. What runs from here on is
		// the census the drain must come back to.
		waitPresent(t, reg, dctx, client)
		if _, err := mb.Call(dctx, &mailboxv1.CallRequest{Client: client, Tool: "echo", Input: "{}"}); err != nil {
			t.Fatal(err)
		}
	}
	baseGoroutines := testkit.CountGoroutines()

	var calls, refusals, lost atomic.Int64
	load := func(span time.Duration) {
		var wg sync.WaitGroup
		end := time.Now().Add(span)
		for d := range drivers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := 0; time.Now().Before(end); n++ {
					input := fmt.Sprintf(`{"d":%d,"n":%d,"t":%d}`, d, n, end.UnixNano())
					cctx, cancel := context.WithTimeout(dctx, 30*time.Second)
					res, err := mb.Call(cctx, &mailboxv1.CallRequest{Client: fmt.Sprintf("soak-%d", (d+n)%hosts), Tool: "echo", Input: input})
					cancel()
					switch {
					case err != nil && status.Code(err) != 0:
						refusals.Add(1)
						t.Logf("refused: %v", err)
					case res.GetCapture().GetStdout() == input:
						calls.Add(1)
					default:
						lost.Add(1)
						t.Errorf("call %s came back as %v", input, res)
					}
				}
			}()
		}
		wg.Wait()
	}
	// The load runs in two halves. After the first, what the store keeps
	// at work has reached its size: NATS's cache of the stream's newest
	// block, its window of recent message ids. A leak grows with the calls,
	// so the second half must not add to the heap the first half left.
	load(duration(t) / 2)
	warmHeap := heapInUse()
	load(duration(t) / 2)
	t.Logf("%d calls answered, %d refused, %d lost", calls.Load(), refusals.Load(), lost.Load())
	if lost.Load() != 0 || refusals.Load() != 0 {
		t.Fatalf("%d lost and %d refused under plain load; want none", lost.Load(), refusals.Load())
	}
	if calls.Load() == 0 {
		t.Fatal("no call was answered")
	}
	// Drained: every goroutine a call started has ended, the mailbox holds
	// nothing, and the heap is where the first half left it.
	testkit.WaitGoroutinesBack(t, baseGoroutines, 10*time.Second)
	testkit.Await(t, "the heap to settle", 10*time.Second, func() error {
		if heap := heapInUse(); heap >= warmHeap+8<<20 {
			return fmt.Errorf("heap %d MiB, %d MiB after the first half", heap>>20, warmHeap>>20)
		}
		return nil
	})
	stopHosts()
	hostsWG.Wait()
	conn.Close()
}

// serveHost advertises echo for client and answers everything it is handed
// until ctx ends.
func serveHost(ctx context.Context, wg *sync.WaitGroup, reg registryv1.RegistryServiceClient, mb mailboxv1.MailboxServiceClient, client string) error {
	hctx := identity.As(ctx, identity.Identity{Name: client, Grade: identity.Host})
	session := proto.String("soak-" + client)
	_, err := reg.Advertise(hctx, &registryv1.AdvertiseRequest{Session: session,
		Tools: []*registryv1.Tool{{Name: "echo", Description: "", InputSchema: `{"type":"object"}`}}})
	if err != nil {
		return err
	}
	stream, err := mb.Follow(hctx, &mailboxv1.FollowRequest{Session: session})
	if err != nil {
		return err
	}
	if _, err := stream.Recv(); err != nil {
		return err
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		var inner sync.WaitGroup
		defer inner.Wait()
		for {
			ev, err := stream.Recv()
			if err != nil {
				return
			}
			if inv := ev.GetInvocation(); inv != nil {
				inner.Add(1)
				go func() {
					defer inner.Done()
					mb.Complete(hctx, &mailboxv1.CompleteRequest{Invocation: inv.GetInvocation(), Capture: capture.New(inv.GetInput(), "", 0)})
				}()
			}
		}
	}()
	return nil
}

// waitPresent waits until the registry shows client present: presence
// travels host → mailbox → registry asynchronously.
func waitPresent(t *testing.T, reg registryv1.RegistryServiceClient, ctx context.Context, client string) {
	t.Helper()
	testkit.Eventually(t, client+" present", 10*time.Second, func() bool {
		res, err := reg.GetClient(ctx, &registryv1.GetClientRequest{Client: client})
		return err == nil && res.GetRow().GetPresent()
	})
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}
