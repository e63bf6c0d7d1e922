package bridge

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/lib/logging"
	"github.com/switchboard-run/switchboard/kit/suite/process"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/mailbox/mailboxtest"
)

// The lease tests run bridge replicas in this process, each with a NATS
// connection of its own, so that one can lose NATS while the rest go on.

// In process, two replicas on one NATS: an exclusive mount runs on one;
// when that bridge stops cleanly it gives its lease up, and the other
// runs the server at its next try (within a second), not a lease later.
func TestAnExclusiveMountMovesAtOnceWhenItsBridgeStops(t *testing.T) {
	t.Parallel()
	s := newSuite(t, timing{})
	nc, err := nats.Connect(s.nats)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	two, err := New(context.Background(), Config{Flags: process.Flags{Security: process.Security{Dev: true}}, Replica: "two"}, nc,
		s.reg, s.mb, logging.Discard())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(two.Close)
	s.mount(t, "solo", parentTool(t, true))
	testkit.Eventually(t, "solo on exactly one replica", 20*time.Second, func() bool {
		<-two.Synced()
		return runs(s.svc, "solo") != runs(two, "solo")
	})
	holder, other := s.svc, two
	if runs(two, "solo") {
		holder, other = two, s.svc
	}
	stopped := time.Now()
	holder.Close()
	testkit.Eventually(t, "solo running on "+other.Replica(), 10*time.Second, func() bool { return runs(other, "solo") })
	t.Logf("exclusive mount: %s stopped; %s ran it %v later", holder.Replica(), other.Replica(), time.Since(stopped).Round(time.Millisecond))
	// Its set, withdrawn by the stopped bridge and advertised again by the
	// other, reaches the mailbox's view of the registry a moment later.
	var got *mailboxv1.Capture
	testkit.Eventually(t, "solo's parent callable through the mailbox", 10*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(driver, 20*time.Second)
		defer cancel()
		res, err := s.mb.Call(ctx, &mailboxv1.CallRequest{Client: "solo", Tool: "parent", Input: `{}`})
		got = res.GetCapture()
		return status.Code(err) != codes.NotFound
	})
	if got == nil || got.GetExitCode() != 0 {
		t.Errorf("solo after the move: %v", got)
	}
}

// inProcess is a bridge replica named name on the core at addr, with a
// NATS connection of its own (closed to cut it off).
func inProcess(t *testing.T, name, addr, natsURL string) (*Service, *nats.Conn) {
	t.Helper()
	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	conn := testkit.Dial(t, addr)
	svc, err := New(context.Background(), Config{Flags: process.Flags{Security: process.Security{Dev: true}}, Replica: name}, nc,
		registryv1.NewRegistryServiceClient(conn), mailboxv1.NewMailboxServiceClient(conn), logging.Discard())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	return svc, nc
}

// runs says whether client's server runs on svc now.
func runs(svc *Service, client string) bool {
	svc.mu.Lock()
	e := svc.entries[client]
	svc.mu.Unlock()
	return e != nil && e.mounted() != nil
}

// A holder cut off from NATS cannot renew its lease: it stops the server
// itself, before the lease lapses and another replica takes it, so the two
// never run it at once.
func TestAHolderThatCannotRenewItsLeaseStopsBeforeAnotherTakesIt(t *testing.T) {
	t.Parallel()
	core := mailboxtest.New(t, mailboxtest.Options{})
	a, ncA := inProcess(t, "a", core.Addr, core.NATS.ClientURL())
	b, ncB := inProcess(t, "b", core.Addr, core.NATS.ClientURL())
	if _, err := a.Mount(admin, &bridgev1.MountRequest{Client: "solo", Config: parentTool(t, true)}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "solo on one replica", 20*time.Second, func() bool { return runs(a, "solo") != runs(b, "solo") })
	holder, other, nc := a, b, ncA
	if runs(b, "solo") {
		holder, other, nc = b, a, ncB
	}

	// Watch both from now on: when the holder stopped, when the other began.
	var stopped, began time.Duration
	cut := time.Now()
	nc.Close()
	testkit.Eventually(t, "solo running on "+other.Replica(), 20*time.Second, func() bool {
		h, o := runs(holder, "solo"), runs(other, "solo")
		if !h && stopped == 0 {
			stopped = time.Since(cut)
		}
		if o && began == 0 {
			began = time.Since(cut)
		}
		if h && o {
			t.Fatalf("solo runs on both %s and %s, %v after %s lost NATS", holder.Replica(), other.Replica(), time.Since(cut), holder.Replica())
		}
		return o
	})
	t.Logf("exclusive mount: %s lost NATS; it stopped the server %v later, %s ran it %v later",
		holder.Replica(), stopped.Round(time.Millisecond), other.Replica(), began.Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(driver, 20*time.Second)
	defer cancel()
	res, err := core.Mailbox.Call(ctx, &mailboxv1.CallRequest{Client: "solo", Tool: "parent", Input: `{}`})
	if err != nil || res.GetCapture().GetExitCode() != 0 {
		t.Errorf("solo after the move: %v, %v", res, err)
	}
}
