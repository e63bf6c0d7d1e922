// Package scale holds the suite-wide tests of many hosts at once: a
// thousands of parked hosts spread over mailbox replicas, one killed.
package scale

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/tests/internal/procs"
)

// defaultHosts is how many hosts park in `make test`; `make soak` parks
// ten thousand (SWITCHBOARD_SCALE_HOSTS=10000), without the race detector.
const defaultHosts = 300

// hostCount is how many parked hosts the failover test runs: defaultHosts
// unless SWITCHBOARD_SCALE_HOSTS says otherwise.
func hostCount(t *testing.T) int {
	t.Helper()
	s := os.Getenv("SWITCHBOARD_SCALE_HOSTS")
	if s == "" {
		return defaultHosts
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 2 {
		t.Fatalf("SWITCHBOARD_SCALE_HOSTS=%q is not a count of hosts of at least 2", s)
	}
	return n
}

// natsReplicas is the copies JetStream keeps of each stream: 3 unless
// SWITCHBOARD_SCALE_NATS_REPLICAS says 1. A parked host is a key and a
// core subscription, no Raft group of its own, so R3 costs it nothing more.
func natsReplicas(t *testing.T) string {
	t.Helper()
	switch s := os.Getenv("SWITCHBOARD_SCALE_NATS_REPLICAS"); s {
	case "", "3":
		return "3"
	case "1":
		return s
	default:
		t.Fatalf("SWITCHBOARD_SCALE_NATS_REPLICAS=%q: the test runs 1 or 3 copies on its three-node cluster", s)
		return ""
	}
}

// recoveryBound is the bound: every host present again on the
// surviving replica within 15 s of the kill.
const recoveryBound = 15 * time.Second

// Hosts park on two mailbox replicas (real processes, on a
// three-node NATS cluster in this process), about half on each; one
// replica is killed (-9). Every host's read is held again, by the
// survivor, within 15 s; the registry shows every host present; and every
// host answers a call through the survivor. The test logs how long
// parking, the move and the calls took.
func TestParkedHostsMoveToTheSurvivingReplicaAndServe(t *testing.T) {
	n := hostCount(t)
	nodes := testkit.NATSCluster(t, 3)
	url := testkit.URLs(nodes)
	s := procs.NewSplit(t, procs.Options{NATS: url, Replicas: 2, Args: []string{"--nats-replicas", natsReplicas(t)}})
	a, b := s.Mailboxes[0], s.Mailboxes[1]
	reads := watchReads(t, url)

	clients := make([]string, n)
	for i := range clients {
		clients[i] = fmt.Sprintf("parked-%04d", i)
	}
	began := time.Now()
	startHosts(t, clients, s.Reg, a.Addr+","+b.Addr)
	var before map[string]int
	testkit.Eventually(t, fmt.Sprintf("%d hosts to hold their reads", n), 10*time.Minute, func() bool {
		before = reads.byReplica(clients)
		return total(before) == n
	})
	parked := time.Since(began)
	if len(before) != 2 {
		t.Fatalf("the %d hosts hold their reads on %v; want them spread over both replicas", n, before)
	}
	for rep, k := range before {
		if k < n/4 {
			t.Fatalf("replica %s holds %d of %d reads (%v); want the hosts spread over both", rep, k, n, before)
		}
	}
	t.Logf("%d hosts parked in %v, their reads held %v", n, parked.Round(time.Millisecond), before)

	killed := time.Now()
	a.Proc.Kill()
	// Waited for past the bound, so that a slow move is measured and
	// reported, not only refused.
	var survivor string
	testkit.Eventually(t, fmt.Sprintf("all %d reads held by the surviving replica", n), 4*recoveryBound, func() bool {
		for rep, k := range reads.byReplica(clients) {
			if k == n {
				survivor = rep
			}
		}
		return survivor != ""
	})
	moved := time.Since(killed)
	if moved > recoveryBound {
		t.Errorf("the %d hosts held their reads on the survivor %v after the kill; want within %v", n, moved.Round(time.Millisecond), recoveryBound)
	}
	if _, ok := before[survivor]; !ok {
		t.Fatalf("the reads moved to %s, which held none before the kill (%v)", survivor, before)
	}
	// The registry's view of presence follows the read keys through its
	// own watch, so it may come a moment after the reads.
	var present int
	testkit.Eventually(t, fmt.Sprintf("all %d hosts present in the registry", n), 4*recoveryBound, func() bool {
		present = countPresent(t, s.Reg, clients)
		return present == n
	})
	shown := time.Since(killed)
	if shown > recoveryBound {
		t.Errorf("the registry showed the %d hosts present %v after the kill; want within %v", n, shown.Round(time.Millisecond), recoveryBound)
	}
	t.Logf("replica killed: %d reads moved to the survivor, all %d held there %v after the kill, all present in the registry after %v",
		n-before[survivor], n, moved.Round(time.Millisecond), shown.Round(time.Millisecond))

	calling := time.Now()
	res := callEach(b.MB, clients, 16)
	for _, err := range res.refused {
		t.Error(err)
	}
	t.Logf("calls through the survivor, one to each host: %s, in %v, the last answered %v after the kill",
		res.summary(), time.Since(calling).Round(time.Millisecond), time.Since(killed).Round(time.Millisecond))
}

func total(by map[string]int) int {
	n := 0
	for _, k := range by {
		n += k
	}
	return n
}

// countPresent asks the registry about every client and counts those shown
// present.
func countPresent(t *testing.T, reg registryv1.RegistryServiceClient, clients []string) int {
	t.Helper()
	var (
		mu sync.Mutex
		n  int
		g  errgroup.Group
	)
	ctx := procs.Driver()
	g.SetLimit(16)
	for _, c := range clients {
		g.Go(func() error {
			res, err := reg.GetClient(ctx, &registryv1.GetClientRequest{Client: c})
			if err != nil {
				t.Errorf("asking the registry about %s: %v", c, err)
				return nil
			}
			if res.GetRow().GetPresent() {
				mu.Lock()
				n++
				mu.Unlock()
			}
			return nil
		})
	}
	_ = g.Wait() // failures are reported through t
	return n
}
