package soak

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/lib/logging"
	"github.com/switchboard-run/switchboard/kit/lib/retry"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
	"github.com/switchboard-run/switchboard/kit/suite/follower"
	"github.com/switchboard-run/switchboard/kit/suite/grpcclient"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/tests/internal/procs"
)

// load is drivers calling echo tools as fast as they can through the
// mailbox replicas (half Invoke then Capture, half Call) while a test
// injects a fault. Every invocation ends answered (collected once, its own
// input), refused (with a sentence) or lost; at the end every collected
// handle must be absent, so none was collected twice.
type load struct {
	t        *testing.T
	replicas []mailboxv1.MailboxServiceClient
	clients  []string

	answered, refused, lost, twice atomic.Int64
	mu                             sync.Mutex
	refusals                       map[string]int // a refusal's sentence → how often
	collected                      []string       // handles collected

	stop chan struct{}
	wg   sync.WaitGroup
}

// collectWithin bounds how long a driver tries to collect one handle:
// past it the invocation is lost. It covers a dead replica's lease and a
// NATS leader election with room to spare.
const collectWithin = 2 * time.Minute

// startLoad runs drivers against the mailbox replicas at addrs, calling
// the echo tool of clients in turn; driver d starts on replica d mod the
// replicas and moves to the next one when its replica is unavailable.
func startLoad(t *testing.T, drivers int, addrs, clients []string, dial ...grpc.DialOption) *load {
	l := &load{t: t, clients: clients, refusals: map[string]int{}, stop: make(chan struct{})}
	for _, a := range addrs {
		l.replicas = append(l.replicas, mailboxv1.NewMailboxServiceClient(testkit.Dial(t, a, dial...)))
	}
	for d := range drivers {
		l.wg.Go(func() { l.drive(d) })
	}
	t.Cleanup(l.halt)
	return l
}

// redial is how a driver backs off from a replica it could not use before
// it tries the next one.
var redial = retry.Policy{Base: 20 * time.Millisecond, Max: time.Second, Multiplier: 2, Jitter: 0.2}

func (l *load) drive(d int) {
	dr := &driver{at: d % len(l.replicas), backoff: retry.NewBackoff(redial)}
	for n := 0; ; n++ {
		select {
		case <-l.stop:
			return
		default:
		}
		input := fmt.Sprintf(`{"driver":%d,"n":%d}`, d, n)
		client := l.clients[(d+n)%len(l.clients)]
		if d%2 == 1 {
			l.call(dr, client, input)
			continue
		}
		ctx, cancel := context.WithTimeout(procs.Driver(), 20*time.Second)
		res, err := l.replicas[dr.at].Invoke(ctx, &mailboxv1.InvokeRequest{Client: client, Tool: "echo", Input: input})
		cancel()
		if err != nil {
			l.refuse(input, err)
			l.next(dr)
			continue
		}
		dr.backoff.Reset()
		l.collect(dr, res.GetInvocation(), input)
	}
}

// call makes one Call, the hand-off that writes nothing durable while its
// host reads: answered with its input, or refused with a sentence (a call
// its holding replica took down with it fails in band, saying so), or,
// when its wait ends first, collected by its handle.
func (l *load) call(dr *driver, client, input string) {
	ctx, cancel := context.WithTimeout(procs.Driver(), 20*time.Second)
	defer cancel()
	res, err := l.replicas[dr.at].Call(ctx, &mailboxv1.CallRequest{Client: client, Tool: "echo", Input: input})
	switch {
	case err != nil:
		l.refuse(input, err)
		l.next(dr)
	case res.GetCapture() == nil:
		// The call's wait ended first (a NATS election can hold an answer
		// that long): as the contract says, its handle is collected later.
		l.collect(dr, res.GetInvocation(), input)
	case res.GetCapture().GetStdout() != input:
		l.lose("the call %s (%s) answered %v, not its input echoed", res.GetInvocation(), input, res.GetCapture())
	default:
		dr.backoff.Reset()
		l.answered.Add(1)
		l.mu.Lock()
		l.collected = append(l.collected, res.GetInvocation())
		l.mu.Unlock()
	}
}

// driver is where one driver stands: the replica it calls, and its
// backoff from replicas it could not use.
type driver struct {
	at      int
	backoff *retry.Backoff
}

// next moves dr to the next replica after a pause.
func (l *load) next(dr *driver) {
	dr.at = (dr.at + 1) % len(l.replicas)
	retry.Sleep(context.Background(), dr.backoff.Next(), nil)
}

// refuse counts a refused Invoke: a status with a sentence is a refusal;
// anything else (the driver's own deadline, no message) loses the
// invocation, which may have been stored without the driver knowing.
func (l *load) refuse(input string, err error) {
	st, ok := status.FromError(err)
	if !ok || st.Message() == "" || st.Code() == codes.DeadlineExceeded || st.Code() == codes.Canceled || st.Code() == codes.Unknown {
		l.lose("invoke %s failed without a sentence: %v", input, err)
		return
	}
	l.refused.Add(1)
	l.mu.Lock()
	l.refusals[st.Code().String()+": "+st.Message()]++
	l.mu.Unlock()
}

// collect waits for the capture of id through the driver's replica,
// moving to the next replica while one is unavailable. Every try names the
// one collection with a retry key: a replica that took the capture and died
// before its reply was sent leaves it to the next try.
func (l *load) collect(dr *driver, id, input string) {
	deadline := time.Now().Add(collectWithin)
	var trail []string // the collects that failed, for the report of a lost one
	key := proto.String("soak-collect")
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(procs.Driver(), 15*time.Second)
		res, err := l.replicas[dr.at].Capture(ctx, &mailboxv1.CaptureRequest{Invocation: id, Wait: durationpb.New(10 * time.Second), RetryKey: key})
		cancel()
		if err != nil {
			trail = append(trail, fmt.Sprintf("replica %d: %v", dr.at, status.Code(err)))
		}
		switch code := status.Code(err); {
		case err == nil && res.GetCapture() == nil: // still running
		case err == nil && res.GetCapture().GetStdout() == input:
			l.answered.Add(1)
			l.mu.Lock()
			l.collected = append(l.collected, id)
			l.mu.Unlock()
			return
		case err == nil:
			l.lose("the capture of %s (%s) is %v, not its input echoed", id, input, res.GetCapture())
			return
		case code == codes.Unavailable || code == codes.DeadlineExceeded:
			l.next(dr)
		default:
			l.lose("collecting %s (%s) after %s: %v", id, input, strings.Join(trail, ", "), err)
			return
		}
	}
	l.lose("%s (%s) was not answered within %v: %s", id, input, collectWithin, l.whereIs(dr, id))
}

// whereIs says, for the report of a lost handle, how often a host ran it
// and what the mailbox knows of it.
func (l *load) whereIs(dr *driver, id string) string {
	runs := 0
	if n, ok := ran.Load(id); ok {
		runs = int(n.(*atomic.Int32).Load())
	}
	ctx, cancel := context.WithTimeout(procs.Driver(), 5*time.Second)
	defer cancel()
	st, err := l.replicas[dr.at].Status(ctx, &mailboxv1.StatusRequest{Invocation: id})
	if err != nil {
		return fmt.Sprintf("run %d times by its host; status: %v", runs, err)
	}
	return fmt.Sprintf("run %d times by its host; %s, handed out %d times", runs, st.GetPhase(), st.GetHandOffs())
}

func (l *load) lose(format string, args ...any) {
	l.lost.Add(1)
	l.t.Errorf(format, args...)
}

// phase waits until n more invocations than now have been answered and,
// in the long form (`make soak`), until half of SWITCHBOARD_SOAK has passed.
func (l *load) phase(t *testing.T, n int64, what string) {
	t.Helper()
	want, until := l.answered.Load()+n, time.Now()
	if soaking() {
		until = until.Add(duration(t) / 2)
	}
	began := time.Now()
	testkit.Eventually(t, fmt.Sprintf("%d more answered invocations (%s)", n, what), 2*collectWithin+time.Until(until), func() bool {
		return l.answered.Load() >= want && time.Now().After(until)
	})
	t.Logf("%d answered %s, in %v", n, what, time.Since(began).Round(time.Millisecond))
}

// halt stops the drivers once their invocations in hand are settled.
func (l *load) halt() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	l.wg.Wait()
}

// finish halts the load, checks through replica that every collected
// handle is absent now (collected once), logs the counts and fails the
// test unless every invocation was answered once or refused with a
// sentence.
func (l *load) finish(replica mailboxv1.MailboxServiceClient) {
	l.t.Helper()
	l.halt()
	for _, id := range l.collected {
		_, err := replica.Capture(procs.Driver(), &mailboxv1.CaptureRequest{Invocation: id})
		if status.Code(err) != codes.NotFound {
			l.twice.Add(1)
			l.t.Errorf("%s was collected, and then again: %v", id, err)
		}
	}
	l.t.Logf("%d answered, %d refused with a sentence, %d lost, %d answered twice",
		l.answered.Load(), l.refused.Load(), l.lost.Load(), l.twice.Load())
	sentences := slices.Sorted(func(yield func(string) bool) {
		for s, n := range l.refusals {
			if !yield(fmt.Sprintf("%d× %s", n, s)) {
				return
			}
		}
	})
	if len(sentences) > 0 {
		l.t.Logf("the refusals:\n  %s", strings.Join(sentences, "\n  "))
	}
	if l.lost.Load() != 0 || l.twice.Load() != 0 || l.answered.Load() == 0 {
		l.t.Fatalf("want every invocation answered once or refused with a sentence")
	}
}

// echoHosts serves the echo tool as each of clients, advertising to the
// registry at reg, with a tool-host follower (the host's and the bridge's
// core) on one connection to every mailbox address: when the replica it
// follows dies it redials another, as a host behind a load balancer does.
func echoHosts(t *testing.T, reg string, mailboxes []string, clients []string, dial ...grpc.DialOption) {
	t.Helper()
	r := manual.NewBuilderWithScheme("replicas")
	var state resolver.State
	for _, a := range mailboxes {
		state.Addresses = append(state.Addresses, resolver.Address{Addr: a})
	}
	r.InitialState(state)
	cc, err := grpcclient.Dial(r.Scheme()+":///mailbox", nil, append(dial, grpc.WithResolvers(r))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	mb := mailboxv1.NewMailboxServiceClient(cc)
	registry := registryv1.NewRegistryServiceClient(testkit.Dial(t, reg, dial...))
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { stop(); wg.Wait() })
	for _, client := range clients {
		as := func(ctx context.Context) context.Context {
			return identity.As(ctx, identity.Identity{Name: client, Grade: identity.Host})
		}
		session := "load-" + client
		f := follower.New(follower.Options{Mailbox: mb, Session: session, As: as, Slots: 16, RunContext: ctx, Log: logging.Discard(),
			Advertise: func(ctx context.Context) error {
				_, err := registry.Advertise(as(ctx), &registryv1.AdvertiseRequest{Session: &session,
					Tools: []*registryv1.Tool{{Name: "echo", Description: "", InputSchema: `{"type":"object"}`}}})
				return err
			}})
		wg.Go(func() { _ = f.Run(ctx, echo{}) })
		procs.WaitPresent(t, registry, client, true, procs.StartTimeout)
	}
}

// echo answers every invocation with its input as stdout.
type echo struct{}

// ran counts the runs of each invocation id by the echo hosts, for the
// report of a lost one.
var ran sync.Map

func (echo) Run(_ context.Context, inv *mailboxv1.Invocation) *mailboxv1.Capture {
	n, _ := ran.LoadOrStore(inv.GetInvocation(), new(atomic.Int32))
	n.(*atomic.Int32).Add(1)
	return capture.New(inv.GetInput(), "", 0)
}
