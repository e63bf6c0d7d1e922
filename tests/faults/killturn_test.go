package faults

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/mailbox"
	"github.com/switchboard-run/switchboard/tests/internal/drill"
	"github.com/switchboard-run/switchboard/tests/internal/procs"
)

// takeOverBound is the bound: an exclusive mount runs again on
// another bridge within 10 s of its bridge's death.
const takeOverBound = 10 * time.Second

// The whole suite as replicas on a three-node NATS cluster (registry, two
// mailboxes, two bridges sharing an exclusive plugin mount, a host, two
// gateways behind a round-robin front) under gRPC, /v1/act and MCP load
// of both eras, while a gateway, the mount's bridge, the host's mailbox and
// the registry are killed in turn, then a NATS node leading a stream is
// restarted. Every call is answered once with its own input or refused with
// a sentence; the mount moves within 10 s; both MCP sessions go on
// (docs/deploy.md, "The fault drill").
func TestKillingAGatewayABridgeAndAMailboxInTurnUnderLoadLosesNoCall(t *testing.T) {
	t.Parallel()
	nodes := testkit.NATSCluster(t, 3)
	url := testkit.URLs(nodes)
	// --presence-ttl 3s: a killed replica's hosts show absent within 3 s.
	s := procs.NewSplit(t, procs.Options{NATS: url, Replicas: 2, Args: []string{"--nats-replicas", "3"}, MailboxArgs: []string{"--presence-ttl", "3s"}})
	a, b := s.Mailboxes[0], s.Mailboxes[1]
	kv := presenceBucket(t, url)

	// The host first finds A alone, so that it follows A, the replica
	// killed last; B is back before anything else starts.
	b.Proc.Kill()
	runs := filepath.Join(t.TempDir(), "runs")
	procs.Host(t, "laptop", drill.EchoTools(runs), s.RegAddr, s.MailboxAddrs())
	s.WaitPresent("laptop", true, 20*time.Second)
	s.StartMailbox(1)
	onA := heldRead(t, kv, "")

	bridges := startBridges(t, s)
	mountSolo(t, bridges[0])
	holder := exclusiveHolder(t, bridges)
	admin := testkit.As("ops", identity.Admin)
	for _, c := range []string{"laptop", "solo"} {
		if _, err := s.Reg.RegisterClient(admin, &registryv1.RegisterClientRequest{Workspace: "default", Client: c}); err != nil {
			t.Fatal(err)
		}
	}
	gwAddrs := []string{testkit.FreeAddr(t), testkit.FreeAddr(t)}
	gateways := make([]*testkit.Proc, len(gwAddrs))
	for i, addr := range gwAddrs {
		gateways[i] = s.Gateway(addr, bridges[0].addr+","+bridges[1].addr)
	}
	front := testkit.NewFront(t, "http://"+gwAddrs[0], "http://"+gwAddrs[1])

	drivers := []*drill.Driver{
		grpcDriver(t, s.MailboxAddrs()),
		actDriver(front.URL),
		mcpDriver(t, front.URL, "2025-11-25"),
		mcpDriver(t, front.URL, "2026-07-28"),
	}
	began := start(drivers)
	defer stop(drivers)
	goOn := func(when string) {
		t.Helper()
		for _, d := range drivers {
			d.GoOn(t, 3, when, 90*time.Second)
		}
	}
	goOn("before any kill")
	phases := []drill.Phase{{Fault: "none", At: began}}

	// A gateway: the drivers through the front go on through the other.
	killed := time.Now()
	phases = append(phases, drill.Phase{Fault: "a gateway killed", At: killed})
	gateways[0].Kill()
	t.Logf("gateway %s killed at %s", gwAddrs[0], killed.Format("15:04:05.000"))
	front.Down[0].Store(true) // as a balancer's health check would
	for _, d := range drivers[1:] {
		t.Logf("gateway killed: %s answered a call begun after the kill %v after it", d.Name, d.FirstAnswerAfter(t, "", killed, 90*time.Second))
	}
	goOn("after the gateway was killed")

	// The bridge running the exclusive mount: the other bridge runs it.
	standby := bridges[0]
	if holder == bridges[0] {
		standby = bridges[1]
	}
	killed = time.Now()
	phases = append(phases, drill.Phase{Fault: "the bridge running the exclusive mount killed", At: killed})
	holder.proc.Kill()
	t.Logf("bridge %s killed at %s", holder.name, killed.Format("15:04:05.000"))
	testkit.Eventually(t, "solo running on "+standby.name, 6*takeOverBound, func() bool {
		row := standby.row(t, "solo")
		return row.GetState() == bridgev1.State_STATE_RUNNING && slices.Equal(row.GetRunningOn(), []string{standby.name})
	})
	took := time.Since(killed)
	t.Logf("bridge %s killed: %s ran the exclusive mount %v after it", holder.name, standby.name, took.Round(time.Millisecond))
	if took > takeOverBound {
		t.Errorf("the exclusive mount ran on %s %v after %s was killed; the bound is %v", standby.name, took.Round(time.Millisecond), holder.name, takeOverBound)
	}
	for _, d := range drivers {
		t.Logf("bridge killed: %s answered a call to solo begun after the kill %v after it", d.Name, d.FirstAnswerAfter(t, "solo", killed, 90*time.Second))
	}
	goOn("after the bridge was killed")

	// The mailbox replica holding the host's read: the host moves to B.
	killed = time.Now()
	phases = append(phases, drill.Phase{Fault: "the mailbox replica holding the host's read killed", At: killed})
	a.Proc.Kill()
	t.Logf("mailbox replica %s killed at %s", a.Addr, killed.Format("15:04:05.000"))
	heldRead(t, kv, onA.Replica)
	t.Logf("mailbox replica killed: the host held its read on the other %v after it", time.Since(killed).Round(time.Millisecond))
	for _, d := range drivers {
		t.Logf("mailbox replica killed: %s answered a call to laptop begun after the kill %v after it", d.Name, d.FirstAnswerAfter(t, "laptop", killed, 90*time.Second))
	}
	goOn("after the mailbox replica was killed")

	// The registry, killed and started again: calls go on from the
	// mailboxes' views meanwhile.
	killed = time.Now()
	phases = append(phases, drill.Phase{Fault: "the registry killed and started again", At: killed})
	s.RegProc.Kill()
	s.StartRegistry()
	goOn("after the registry came back")

	// The NATS node leading the first durable partition, shut down: two
	// copies of every stream and bucket are left.
	leader, _ := testkit.StreamLeader(t, nodes, mailbox.DurableStreams()[0])
	killed = time.Now()
	phases = append(phases, drill.Phase{Fault: "a NATS node of three (a stream leader) shut down", At: killed})
	leader.Shutdown()
	t.Logf("NATS node %s shut down at %s", leader.Name(), killed.Format("15:04:05.000"))
	goOn("after the NATS node was shut down")

	// The same node started again on its storage: it rejoins, and the
	// consumers and replies routed through it move again.
	killed = time.Now()
	phases = append(phases, drill.Phase{Fault: "that NATS node started again", At: killed})
	back, err := leader.Restart()
	if err != nil {
		t.Fatalf("starting NATS node %s again: %v", leader.Name(), err)
	}
	t.Cleanup(back.Shutdown)
	goOn("after the NATS node was started again")

	for _, d := range drivers {
		d.Stop()
	}
	ran := drill.Runs(t, runs)
	for _, d := range drivers {
		d.Tally(t, ran)
	}
	t.Logf("the drill, by fault (calls by the phase they ended in):\n%s", drill.Table(drivers, phases, ran))
}

// bridge is one bridge replica process.
type bridge struct {
	name, addr string
	proc       *testkit.Proc
	api        bridgev1.BridgeServiceClient
}

func startBridges(t *testing.T, s *procs.Split) []*bridge {
	t.Helper()
	var out []*bridge
	for _, name := range []string{"bridge-1", "bridge-2"} {
		br := &bridge{name: name, addr: testkit.FreeAddr(t)}
		br.proc = s.Bridge(name, br.addr)
		br.api = bridgev1.NewBridgeServiceClient(testkit.Dial(t, br.addr))
		out = append(out, br)
	}
	return out
}

// row is client's ListServers row on br, or nil (also while br is down).
func (br *bridge) row(t *testing.T, client string) *bridgev1.ServerStatus {
	t.Helper()
	res, err := br.api.ListServers(testkit.As("ops", identity.Admin), &bridgev1.ListServersRequest{})
	if err != nil {
		return nil
	}
	for _, row := range res.GetServers() {
		if row.GetClient() == client {
			return row
		}
	}
	return nil
}

// mountSolo mounts the fake plugin backend as "solo", exclusive: one
// bridge runs it at a time.
func mountSolo(t *testing.T, br *bridge) {
	t.Helper()
	fake := testkit.Build(t, procs.Module+"services/bridge/internal/plugin/testdata/fakebackend")
	cfg := &bridgev1.ServerConfig{Exclusive: true, Transport: &bridgev1.ServerConfig_Plugin{Plugin: &bridgev1.PluginManifest{
		Command: []string{fake}, StartAtMount: true,
		Tools: []*registryv1.Tool{{Name: "echo", Description: "answers its input", InputSchema: `{"type":"object"}`}},
	}}}
	if _, err := br.api.Mount(testkit.As("ops", identity.Admin), &bridgev1.MountRequest{Client: "solo", Config: cfg}); err != nil {
		t.Fatalf("Mount(solo) on %s: %v", br.name, err)
	}
}

// exclusiveHolder waits until solo runs on one bridge and stands by on the
// other, and returns the one running it.
func exclusiveHolder(t *testing.T, bridges []*bridge) *bridge {
	t.Helper()
	var holder *bridge
	testkit.Eventually(t, "solo running on one bridge, standing by on the other", 30*time.Second, func() bool {
		holder = nil
		for i, br := range bridges {
			row, other := br.row(t, "solo"), bridges[1-i].row(t, "solo")
			if row.GetState() == bridgev1.State_STATE_RUNNING && other.GetState() == bridgev1.State_STATE_STANDBY &&
				slices.Equal(other.GetRunningOn(), []string{br.name}) {
				holder = br
			}
		}
		return holder != nil
	})
	return holder
}
