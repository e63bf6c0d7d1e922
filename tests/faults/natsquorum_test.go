package faults

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/types/known/durationpb"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/tests/internal/drill"
	"github.com/switchboard-run/switchboard/tests/internal/procs"
)

// quorumOutage is how long the two nodes stay away once JetStream has lost
// its quorum: the fault's length, long enough for every retry in the
// suite to have backed off several times.
const quorumOutage = 10 * time.Second

// recoveryBound is the bound on the suite's own recovery: tools answer,
// durable invocations included, within 5 s of every stream having its
// leader again (which takes NATS itself seconds after the nodes start).
const recoveryBound = 5 * time.Second

// Two NATS nodes of three shut down for quorumOutage, then started again
// on their own storage. A call to a connected host goes on meanwhile (it
// is handed over in memory), or waits, or is refused with a sentence;
// once JetStream takes writes again, a Call and a durable Invoke with its
// Capture are answered within recoveryBound, and no driver's call is lost
// or run twice. Drivers call over gRPC and /v1/act throughout; the test
// logs the recovery (docs/deploy.md, "Two NATS nodes lost and back").
func TestTwoNATSNodesLostAndBackServeAgainWithinSeconds(t *testing.T) {
	t.Parallel()
	nodes := testkit.NATSCluster(t, 3)
	s := procs.NewSplit(t, procs.Options{NATS: testkit.URLs(nodes), Args: []string{"--nats-replicas", "3"}})
	runs := filepath.Join(t.TempDir(), "runs")
	procs.Host(t, "laptop", drill.EchoTools(runs), s.RegAddr, s.MailboxAddrs())
	s.WaitPresent("laptop", true, procs.StartTimeout)
	if _, err := s.Reg.RegisterClient(testkit.As("ops", identity.Admin),
		&registryv1.RegisterClientRequest{Workspace: "default", Client: "laptop"}); err != nil {
		t.Fatal(err)
	}
	gw := testkit.FreeAddr(t)
	s.Gateway(gw, s.RegAddr)
	js := testkit.JetStream(t, nodes[0].ClientURL(), nats.MaxReconnects(-1))
	writes := probeBucket(t, js)
	laptop := []drill.Target{drill.Echo("laptop", true)}
	drivers := []*drill.Driver{
		drill.GRPC(s.MB(), func(ctx context.Context) context.Context {
			return identity.As(ctx, identity.Identity{Name: "driver", Grade: identity.Driver})
		}, laptop),
		drill.Act("http://"+gw, &http.Client{Timeout: time.Minute}, asDriver, laptop),
	}
	began := start(drivers)
	defer stop(drivers)
	for _, d := range drivers {
		d.GoOn(t, 3, "before the fault", 90*time.Second)
	}
	phases := []drill.Phase{{Fault: "none", At: began}}

	lost := time.Now()
	phases = append(phases, drill.Phase{Fault: "two NATS nodes of three shut down", At: lost})
	nodes[1].Shutdown()
	nodes[2].Shutdown()
	testkit.Eventually(t, "JetStream to refuse a write without its quorum", time.Minute, func() bool { return writes() != nil })
	t.Logf("NATS nodes %s and %s shut down; JetStream refused a write %v later; away for %v more",
		nodes[1].Name(), nodes[2].Name(), time.Since(lost).Round(time.Millisecond), quorumOutage)
	time.Sleep(quorumOutage) // the fault's length, not a wait for anything

	back := time.Now()
	phases = append(phases, drill.Phase{Fault: "both started again", At: back})
	for i := 1; i <= 2; i++ {
		restarted, err := nodes[i].Restart()
		if err != nil {
			t.Fatalf("starting NATS node %s again: %v", nodes[i].Name(), err)
		}
		nodes[i] = restarted
		t.Cleanup(restarted.Shutdown)
	}
	led := make(chan time.Duration, 1)
	go func() {
		for !everyStreamLed(t, js) && time.Since(back) < 2*time.Minute {
		}
		led <- time.Since(back)
	}()
	var recovery time.Duration
	testkit.Eventually(t, "a Call and a durable Invoke answered once NATS is back", 2*time.Minute, func() bool {
		err := roundTrips(s.MB())
		recovery = time.Since(back)
		return err == nil
	})
	elected := <-led
	t.Logf("recovery: every stream had its leader %v after the nodes started again; a Call and an Invoke begun after that were answered %v after they started",
		elected.Round(time.Millisecond), recovery.Round(time.Millisecond))
	if recovery-elected > recoveryBound {
		t.Errorf("tools answered %v after every stream had its leader again; the bound is %v", (recovery - elected).Round(time.Millisecond), recoveryBound)
	}
	for _, d := range drivers {
		t.Logf("%s answered a call begun after the restart %v after it", d.Name, d.FirstAnswerAfter(t, "", back, 90*time.Second))
		d.GoOn(t, 3, "after NATS came back", 90*time.Second)
		d.Stop()
	}
	ran := drill.Runs(t, runs)
	for _, d := range drivers {
		d.Tally(t, ran)
	}
	t.Logf("the drill, by phase:\n%s", drill.Table(drivers, phases, ran))
}

// probeBucket makes a key-value bucket of the test's own with three
// copies, and returns a write to it bounded by a second: it fails while
// JetStream has no quorum.
func probeBucket(t *testing.T, js jetstream.JetStream) (write func() error) {
	t.Helper()
	kv, err := js.CreateKeyValue(t.Context(), jetstream.KeyValueConfig{Bucket: "quorum_probe", Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	return func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := kv.Put(ctx, "probe", []byte("x"))
		return err
	}
}

// everyStreamLed reports whether every stream (the suite's, its buckets')
// answers for its state with a leader: each elects on its own once the
// quorum is back, some seconds apart.
func everyStreamLed(t *testing.T, js jetstream.JetStream) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	names := js.StreamNames(ctx)
	n := 0
	for name := range names.Name() {
		n++
		s, err := js.Stream(ctx, name)
		if err != nil || s.CachedInfo().Cluster == nil || s.CachedInfo().Cluster.Leader == "" {
			return false
		}
	}
	return names.Err() == nil && n > 0
}

// roundTrips calls laptop's echo as the driver with Call, then with a
// durable Invoke and its Capture, each within two seconds.
func roundTrips(mb mailboxv1.MailboxServiceClient) error {
	ctx, cancel := context.WithTimeout(procs.Driver(), 2*time.Second)
	defer cancel()
	called, err := mb.Call(ctx, &mailboxv1.CallRequest{Client: "laptop", Tool: "echo", Input: `{"text":"call"}`})
	if err != nil || called.GetCapture() == nil {
		return errors.Join(err, errors.New("the Call was not answered"))
	}
	ctx, cancel = context.WithTimeout(procs.Driver(), 2*time.Second)
	defer cancel()
	posted, err := mb.Invoke(ctx, &mailboxv1.InvokeRequest{Client: "laptop", Tool: "echo", Input: `{"text":"invoke"}`})
	if err != nil {
		return err
	}
	got, err := mb.Capture(ctx, &mailboxv1.CaptureRequest{Invocation: posted.GetInvocation(), Wait: durationpb.New(time.Second)})
	if err != nil || got.GetCapture() == nil {
		return errors.Join(err, errors.New("the Invoke was not answered"))
	}
	return nil
}
