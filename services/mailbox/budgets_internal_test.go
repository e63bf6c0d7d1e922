package mailbox

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/switchboard-run/switchboard/kit/lib/logging"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// A replica hears its own announcements after its ledger has moved on; the
// echo of an earlier note's total, heard after a later note's, must not set
// a poster's count back (TestNotesCountInTheBudgets failed now and then on
// it: the budget let a post through that it should have refused).
func TestAReplicaSkipsItsOwnAnnouncements(t *testing.T) {
	t.Parallel()
	nc, err := nats.Connect("", testkit.NATS(t).InProcess())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	h, err := newHeld(nc, Bounds{TTL: time.Hour}, logging.Discard())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.close)
	for _, id := range []string{"inv-a", "inv-b"} {
		if err := h.ledger.Reserve(id, "driver", "laptop", 10); err != nil {
			t.Fatal(err)
		}
	}
	h.noted("inv-a", 100)
	publish := func(from, data string) {
		m := nats.NewMsg(heldNoted)
		m.Header.Set(headerFrom, from)
		m.Data = []byte(data)
		if err := nc.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
	}
	publish(h.self, "inv-a 50")     // a late echo of an earlier note, as this replica sent it
	publish("elsewhere", "inv-b 7") // another replica's, heard after it
	const want = 10 + 10 + 100 + 7
	testkit.Await(t, "the poster's count", 10*time.Second, func() error {
		if _, got, _ := h.ledger.Held("driver", "laptop"); got != want {
			return fmt.Errorf("the poster holds %d bytes, want %d: its own stale announcement set the count back", got, want)
		}
		return nil
	})
}
