package soak

import (
	"fmt"
	"testing"

	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/mailbox"
	"github.com/switchboard-run/switchboard/tests/internal/procs"
)

// The shape of the load under each fault: drivers calling as fast as they
// can, hosts answering, and how many answers each phase waits for.
const (
	faultDrivers = 16
	faultHosts   = 4
	// beforeFault and afterFault are the answers a run waits for before
	// the fault and after it (the fault over, the load recovered).
	beforeFault = 200
	afterFault  = 300
)

// queueStream is one of the mailbox's streams of durable invocations, the
// ones Invoke writes (docs/architecture.md, "Where state lives").
var queueStream = mailbox.DurableStreams()[0]

func hostNames() []string {
	out := make([]string, faultHosts)
	for i := range out {
		out[i] = fmt.Sprintf("load-%d", i)
	}
	return out
}

// A mailbox replica is killed (SIGKILL) mid-load. Every host follows it
// until then and redials the other; a driver whose replica died collects
// its handle through the other one. Every invocation is answered once or
// refused with a sentence.
func TestAMailboxReplicaKilledUnderLoadLosesNothing(t *testing.T) {
	t.Parallel()
	s := procs.NewSplit(t, procs.Options{Replicas: 2, MailboxArgs: []string{"--presence-ttl", "3s"}})
	addrs := []string{s.Mailboxes[0].Addr, s.Mailboxes[1].Addr}
	echoHosts(t, s.RegAddr, addrs, hostNames())
	l := startLoad(t, faultDrivers, addrs, hostNames())
	l.phase(t, beforeFault, "before the replica is killed")
	s.Mailboxes[0].Proc.Kill()
	l.phase(t, afterFault, "after the replica was killed")
	l.finish(s.Mailboxes[1].MB)
}

// One node of a three-node NATS cluster — the leader of a durable stream —
// is shut down mid-load. The streams and buckets keep three copies
// (--nats-replicas 3); the services reconnect to the nodes left and the
// load goes on. Every invocation is answered once or refused with a
// sentence.
func TestANATSNodeShutDownUnderLoadLosesNothing(t *testing.T) {
	t.Parallel()
	nodes := testkit.NATSCluster(t, 3)
	s := procs.NewSplit(t, procs.Options{NATS: testkit.URLs(nodes), Replicas: 2, Args: []string{"--nats-replicas", "3"},
		MailboxArgs: []string{"--presence-ttl", "3s"}})
	addrs := []string{s.Mailboxes[0].Addr, s.Mailboxes[1].Addr}
	echoHosts(t, s.RegAddr, addrs, hostNames())
	l := startLoad(t, faultDrivers, addrs, hostNames())
	l.phase(t, beforeFault, "before the NATS node is shut down")
	leader, _ := testkit.StreamLeader(t, nodes, queueStream)
	t.Logf("shutting down %s, the leader of %s", leader.Name(), queueStream)
	leader.Shutdown()
	l.phase(t, afterFault, "after the NATS node was shut down")
	l.finish(s.Mailboxes[1].MB)
}

// The embedded suite (`switchboard dev`, a process with --data) is killed
// mid-load and started again on the same --data and addresses. Drivers and
// hosts reach it again by themselves. Every invocation is answered once or
// refused with a sentence.
func TestTheEmbeddedSuiteRestartedUnderLoadLosesNothing(t *testing.T) {
	t.Parallel()
	d := procs.StartDev(t, "--presence-ttl", "3s")
	addrs := []string{d.GRPCAddr}
	secret := testkit.DevSecretFollowed(t, d.SecretFile) // each start draws another
	echoHosts(t, d.GRPCAddr, addrs, hostNames(), secret)
	l := startLoad(t, faultDrivers, addrs, hostNames(), secret)
	l.phase(t, beforeFault, "before the suite is killed")
	d.Proc.Kill()
	d.Start()
	l.phase(t, afterFault, "after the suite restarted")
	l.finish(d.MB)
}
