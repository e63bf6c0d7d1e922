package mailbox

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/switchboard-run/switchboard/kit/lib/logging"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
)

// Only the replica an invocation was posted through counts it: what a
// replica does with one it counts (a Call answered where it was posted,
// the common case) goes to nobody, and what it does with another's goes
// to that one, whose ledger follows.
func TestAReplicaAnnouncesOnlyWhatAnotherCounts(t *testing.T) {
	t.Parallel()
	ns := testkit.NATS(t)
	replica := func() *held {
		nc, err := nats.Connect("", ns.InProcess())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		h, err := newHeld(nc, Bounds{TTL: time.Hour}, logging.Discard())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(h.close)
		return h
	}
	here, there := replica(), replica()
	heard := make(chan *nats.Msg, 16)
	sub, err := here.nc.ChanSubscribe("sb.held.>", heard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := here.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := here.ledger.Reserve("inv-here", "driver", "laptop", 10); err != nil {
		t.Fatal(err)
	}
	if err := there.ledger.Reserve("inv-there", "driver", "laptop", 10); err != nil {
		t.Fatal(err)
	}
	capture := inflight.Capture{Stdout: "0123456789"}
	// Its own first: published before the others', they would be heard first.
	here.noted("inv-here", 5)
	here.captured("inv-here", capture)
	here.settled("inv-here", "driver", true, nil)
	here.noted("inv-there", 7)
	here.captured("inv-there", capture)
	for _, want := range []string{heldNoted + " inv-there 7", heldCaptured + " inv-there 10"} {
		m := testkit.Receive(t, heard, 10*time.Second, "an announcement")
		if got := m.Subject + " " + string(m.Data); got != want {
			t.Fatalf("heard %q, want %q: a replica announced what it counts itself", got, want)
		}
	}
	testkit.Await(t, "the other replica's count", 10*time.Second, func() error {
		if total, _, _ := there.ledger.Held("driver", "laptop"); total != 10+7+10 {
			return fmt.Errorf("it holds %d bytes, want %d", total, 10+7+10)
		}
		return nil
	})
	if total, _, _ := here.ledger.Held("driver", "laptop"); total != 0 {
		t.Fatalf("this replica holds %d bytes after its own invocation was taken", total)
	}
	here.settled("inv-there", "driver", true, nil)
	if m := testkit.Receive(t, heard, 10*time.Second, "an announcement"); m.Subject != heldGone || string(m.Data) != "inv-there" {
		t.Fatalf("heard %s %q, want %s inv-there", m.Subject, m.Data, heldGone)
	}
	testkit.Await(t, "the other replica's release", 10*time.Second, func() error {
		if total, _, _ := there.ledger.Held("driver", "laptop"); total != 0 {
			return fmt.Errorf("it still holds %d bytes", total)
		}
		return nil
	})
}
