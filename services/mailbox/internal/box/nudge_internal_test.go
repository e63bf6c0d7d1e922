package box

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/storetest"
)

// An invocation whose stub the home lost (a NATS failover can drop both
// the view's message and the poster's word) is queued there again by the
// poster's next collection that waits without news.
func TestACollectionRequeuesAnInvocationItsHomeLost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testkit.NATS(t).ClientURL()
	poster, home := openBox(t, url, 1), openBox(t, url, 1)
	r, err := home.OpenRead(ctx, "laptop", "s")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	id := inflight.NewID()
	if err := poster.Post(ctx, inflight.Post{ID: id, Client: "laptop", Poster: "driver", Tool: "echo", Input: `{}`}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the home to queue the invocation", 10*time.Second, func() bool {
		home.mu.Lock()
		defer home.mu.Unlock()
		if s := home.slots[id]; s != nil && s.state == queued {
			home.remove(s) // lost, as a failover can lose it
			return true
		}
		return false
	})
	if c, err := poster.Collect(ctx, "driver", id, 200*time.Millisecond, ""); c != nil || err != nil {
		t.Fatalf("collect: %+v %v; want nothing yet", c, err)
	}
	deadline := time.After(10 * time.Second)
	for {
		if got, _ := r.Take(true, storetest.Roomy()); len(got) == 1 && got[0].ID == id {
			return
		}
		select {
		case <-r.Wake():
		case <-deadline:
			t.Fatal("the home never queued the invocation again")
		}
	}
}
