package faults

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc/status"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/presence"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/tests/internal/drill"
	"github.com/switchboard-run/switchboard/tests/internal/procs"
)

// A host given both mailbox replicas (--mailbox A,B) follows A; a driver
// calls through B, steadily, from several callers. A is killed: the host
// moves its read to B by itself (grpc-go's round robin over the list, the
// follower's redial; B takes over the read of the same session), and every
// call made meanwhile is answered once — its tool run once, the
// invocation id being the key — or refused with a sentence. The test logs
// how long the host took to hold its read on B and to answer a call posted
// after the kill.
func TestAHostGivenTwoReplicasMovesToTheSurvivorLosingAndDuplicatingNothing(t *testing.T) {
	t.Parallel()
	ns := testkit.NATS(t)
	// Invocations A had taken from the queue and not yet handed to the
	// host come back when their lease ends: 5 s here, 30 s by default.
	s := procs.NewSplit(t, procs.Options{NATS: ns.ClientURL(), Replicas: 2, MailboxArgs: []string{"--presence-ttl", "3s"}})
	a, b := s.Mailboxes[0], s.Mailboxes[1]
	kv := presenceBucket(t, ns.ClientURL())

	// The host first finds A alone, so that it follows A; B comes back
	// before the kill and the host's connection to it is ready.
	b.Proc.Kill()
	runs := filepath.Join(t.TempDir(), "runs")
	procs.Host(t, "laptop", drill.EchoTools(runs), s.RegAddr, a.Addr+","+b.Addr)
	s.WaitPresent("laptop", true, 20*time.Second)
	s.StartMailbox(1)
	onA := heldRead(t, kv, "")

	c := &steadyCalls{mb: b.MB}
	c.start(4)
	c.waitAnswered(t, 20) // the stream flows before the kill
	killed := time.Now()
	a.Proc.Kill()
	after := c.made()
	heldRead(t, kv, onA.Replica) // within 15 s, the bound for 1,000 hosts
	moved := time.Since(killed)
	c.waitAnsweredFrom(t, after)
	serving := time.Since(killed)
	c.waitAnswered(t, c.answered()+20) // and it goes on through B
	c.stop()

	answered, refused, slowest := c.tally(t)
	ran := drill.Runs(t, runs)
	for id := range answered {
		if ran[id] != 1 {
			t.Errorf("invocation %s was answered, and its tool ran %d times; want once", id, ran[id])
		}
	}
	t.Logf("replica A killed: the host held its read on B after %v and answered a call posted after the kill %v after it; "+
		"of %d calls through B, %d were answered once (the slowest in %v) and %d refused with a sentence",
		moved.Round(time.Millisecond), serving.Round(time.Millisecond), len(c.results), len(answered), slowest.Round(time.Millisecond), refused)
}

// steadyCalls is callers calling echo through one replica until stopped.
type steadyCalls struct {
	mb   mailboxv1.MailboxServiceClient
	done atomic.Bool
	wg   sync.WaitGroup

	mu      sync.Mutex
	results []callResult // in the order the calls were made
}

type callResult struct {
	settled bool
	took    time.Duration
	id      string // the answered invocation
	err     error
}

func (c *steadyCalls) start(callers int) {
	for range callers {
		c.wg.Go(func() {
			for !c.done.Load() {
				c.mu.Lock()
				n := len(c.results)
				c.results = append(c.results, callResult{})
				c.mu.Unlock()
				input := fmt.Sprintf(`{"n":%d}`, n)
				ctx, cancel := context.WithTimeout(procs.Driver(), 30*time.Second)
				began := time.Now()
				res, err := c.mb.Call(ctx, &mailboxv1.CallRequest{Client: "laptop", Tool: "echo", Input: input})
				cancel()
				r := callResult{settled: true, err: err, took: time.Since(began)}
				if err == nil {
					r.id = res.GetInvocation()
					if got := res.GetCapture().GetStdout(); got != input {
						r.err = fmt.Errorf("call %d (%s) was answered %v, not its own input", n, r.id, res.GetCapture())
					}
				}
				c.mu.Lock()
				c.results[n] = r
				c.mu.Unlock()
			}
		})
	}
}

// made is how many calls have been made so far.
func (c *steadyCalls) made() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.results)
}

func (c *steadyCalls) stop() { c.done.Store(true); c.wg.Wait() }

func (c *steadyCalls) answered() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, r := range c.results {
		if r.settled && r.err == nil {
			n++
		}
	}
	return n
}

func (c *steadyCalls) waitAnswered(t *testing.T, n int) {
	t.Helper()
	testkit.Eventually(t, fmt.Sprintf("%d calls answered", n), 60*time.Second, func() bool { return c.answered() >= n })
}

// waitAnsweredFrom waits until a call made at or after index from is
// answered.
func (c *steadyCalls) waitAnsweredFrom(t *testing.T, from int) {
	t.Helper()
	testkit.Eventually(t, "a call posted after the kill to be answered", 60*time.Second, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, r := range c.results[from:] {
			if r.settled && r.err == nil {
				return true
			}
		}
		return false
	})
}

// tally returns the answered invocations, how many calls were refused, and
// how long the slowest answer took; a refusal must be a sentence, and no
// answer may be another call's.
func (c *steadyCalls) tally(t *testing.T) (answered map[string]bool, refused int, slowest time.Duration) {
	t.Helper()
	answered = map[string]bool{}
	for i, r := range c.results {
		if r.err == nil {
			slowest = max(slowest, r.took)
		}
		switch {
		case r.err == nil && answered[r.id]:
			t.Errorf("call %d was answered by invocation %s, which answered another call too", i, r.id)
		case r.err == nil:
			answered[r.id] = true
		case status.Convert(r.err).Message() == "":
			t.Errorf("call %d was refused with no sentence: %v", i, r.err)
		case !strings.HasPrefix(r.err.Error(), "rpc error"):
			t.Error(r.err)
		default:
			refused++
			t.Logf("call %d refused: %s", i, status.Convert(r.err).Message())
		}
	}
	return answered, refused, slowest
}

func presenceBucket(t *testing.T, url string) jetstream.KeyValue {
	t.Helper()
	kv, err := testkit.JetStream(t, url).KeyValue(context.Background(), presence.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

// heldRead waits until laptop's read is held by a replica other than
// notBy, and returns it.
func heldRead(t *testing.T, kv jetstream.KeyValue, notBy string) *presence.Read {
	t.Helper()
	var read *presence.Read
	testkit.Eventually(t, "laptop's read held by a replica other than "+notBy, 15*time.Second, func() bool {
		r, err := presence.Current(context.Background(), kv, "laptop")
		if err == nil && r != nil && r.Held && r.Replica != notBy {
			read = r
		}
		return read != nil
	})
	return read
}
