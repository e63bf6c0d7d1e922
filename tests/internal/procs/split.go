// Package procs runs the suite for the suite-wide tests (faults, soak,
// bad input): a split deployment of real processes on loopback — the
// registry, mailbox replicas, a gateway, tool hosts, all on one NATS — and
// the embedded suite, `switchboard dev`, as a process or in this one. A
// test may kill any process and start it again on the same address.
package procs

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// Module is the import path every binary of the suite is under.
const Module = "github.com/switchboard-run/switchboard/"

// StartTimeout bounds how long a process of the suite may take to serve.
const StartTimeout = 30 * time.Second

// Options shape a split deployment.
type Options struct {
	// NATS is every service's --nats; empty: a NATS server of the test's
	// own (testkit.NATS).
	NATS string
	// Replicas is how many mailbox processes serve (1 when 0).
	Replicas int
	// Args are flags the registry and every mailbox get besides their own
	// (--nats-replicas 3).
	Args []string
	// MailboxArgs are flags every mailbox gets besides (--presence-ttl 3s).
	MailboxArgs []string
}

// Split is a split deployment of real processes in dev mode.
type Split struct {
	t    testing.TB
	o    Options
	bins map[string]string

	RegAddr, HTTPAddr string
	RegProc, GWProc   *testkit.Proc
	Reg               registryv1.RegistryServiceClient
	regConn           *grpc.ClientConn
	// Mailboxes are the mailbox replicas, each on its own address.
	Mailboxes []*Replica
}

// Replica is one mailbox process.
type Replica struct {
	Addr string
	Proc *testkit.Proc
	MB   mailboxv1.MailboxServiceClient
	conn *grpc.ClientConn
}

// NewSplit starts the registry and the mailbox replicas and waits until
// each serves.
func NewSplit(t testing.TB, o Options) *Split {
	t.Helper()
	if o.NATS == "" {
		o.NATS = testkit.NATS(t).ClientURL()
	}
	s := &Split{t: t, o: o, bins: map[string]string{}, RegAddr: testkit.FreeAddr(t), HTTPAddr: testkit.FreeAddr(t)}
	for _, c := range []string{"registry", "mailbox", "gateway"} {
		s.bins[c] = testkit.Build(t, Module+"services/"+c+"/cmd/"+c)
	}
	s.regConn = testkit.Dial(t, s.RegAddr)
	s.Reg = registryv1.NewRegistryServiceClient(s.regConn)
	s.StartRegistry()
	for range max(o.Replicas, 1) {
		r := &Replica{Addr: testkit.FreeAddr(t)}
		r.conn = testkit.Dial(t, r.Addr)
		r.MB = mailboxv1.NewMailboxServiceClient(r.conn)
		s.Mailboxes = append(s.Mailboxes, r)
		s.StartMailbox(len(s.Mailboxes) - 1)
	}
	return s
}

// MB is the first mailbox replica's client.
func (s *Split) MB() mailboxv1.MailboxServiceClient { return s.Mailboxes[0].MB }

// StartRegistry starts the registry (again) on its address.
func (s *Split) StartRegistry() {
	s.t.Helper()
	s.RegProc = testkit.Start(s.t, s.bins["registry"], append([]string{"--dev", "--listen", s.RegAddr, "--nats", s.o.NATS}, s.o.Args...)...)
	testkit.WaitHealthy(s.t, s.RegAddr, registryv1.RegistryService_ServiceDesc.ServiceName, StartTimeout)
	testkit.AwaitReady(s.t, s.regConn, StartTimeout) // a restart's: past its reconnect backoff
}

// StartMailbox starts mailbox replica i (again) on its address.
func (s *Split) StartMailbox(i int) {
	s.t.Helper()
	r := s.Mailboxes[i]
	args := append([]string{"--dev", "--listen", r.Addr, "--registry", s.RegAddr, "--nats", s.o.NATS}, s.o.Args...)
	r.Proc = testkit.Start(s.t, s.bins["mailbox"], append(args, s.o.MailboxArgs...)...)
	testkit.WaitHealthy(s.t, r.Addr, mailboxv1.MailboxService_ServiceDesc.ServiceName, StartTimeout)
	testkit.AwaitReady(s.t, r.conn, StartTimeout)
}

// StartGateway starts the gateway on HTTPAddr, in front of the first
// mailbox replica.
func (s *Split) StartGateway() {
	s.t.Helper()
	s.GWProc = testkit.Start(s.t, s.bins["gateway"], "--dev", "--listen", s.HTTPAddr, "--registry", s.RegAddr,
		"--mailbox", s.Mailboxes[0].Addr, "--bridge", s.RegAddr)
}

// Host starts a tool host process serving tools (a tools file's JSON) as
// client, following mailbox replica i.
func (s *Split) Host(client, tools string, i int) *testkit.Proc {
	s.t.Helper()
	return Host(s.t, client, tools, s.RegAddr, s.Mailboxes[i].Addr)
}

// Host starts a tool host process serving tools (a tools file's JSON) as
// client, advertising to the registry at reg and following the mailbox at
// mb.
func Host(t testing.TB, client, tools, reg, mb string) *testkit.Proc {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tools.json")
	if err := os.WriteFile(path, []byte(tools), 0o644); err != nil {
		t.Fatal(err)
	}
	return testkit.Start(t, testkit.Build(t, Module+"services/host/cmd/host"), "--dev", "--client", client, "--tools", path,
		"--registry", reg, "--mailbox", mb)
}

// WaitPresent waits until the registry shows client present (or, with
// present false, absent) within timeout.
func (s *Split) WaitPresent(client string, present bool, timeout time.Duration) {
	s.t.Helper()
	WaitPresent(s.t, s.Reg, client, present, timeout)
}

// WaitPresent waits until reg shows client present (or absent) within
// timeout.
func WaitPresent(t testing.TB, reg registryv1.RegistryServiceClient, client string, present bool, timeout time.Duration) {
	t.Helper()
	what := client + " to be present"
	if !present {
		what = client + " to be absent"
	}
	testkit.Eventually(t, what, timeout, func() bool {
		res, err := reg.GetClient(Driver(), &registryv1.GetClientRequest{Client: client})
		return err == nil && res.GetRow().GetPresent() == present
	})
}

// Driver is a context calling as the operator "driver".
func Driver() context.Context {
	return testkit.As("driver", identity.Driver)
}

// MailboxAddrs is every mailbox replica's address, comma-separated: the
// --mailbox of a peer that may use any of them.
func (s *Split) MailboxAddrs() string {
	addrs := make([]string, len(s.Mailboxes))
	for i, r := range s.Mailboxes {
		addrs[i] = r.Addr
	}
	return strings.Join(addrs, ",")
}

// Bridge starts a bridge replica named name on addr, on the deployment's
// NATS (with its Args) in front of every mailbox replica, and waits until
// it serves. Start replicas one after the other: the first declares the
// bridge's buckets.
func (s *Split) Bridge(name, addr string) *testkit.Proc {
	s.t.Helper()
	p := testkit.Start(s.t, testkit.Build(s.t, Module+"services/bridge/cmd/bridge"), append([]string{"--dev", "--listen", addr,
		"--registry", s.RegAddr, "--mailbox", s.MailboxAddrs(), "--nats", s.o.NATS, "--replica", name}, s.o.Args...)...)
	testkit.WaitHealthy(s.t, addr, bridgev1.BridgeService_ServiceDesc.ServiceName, StartTimeout)
	return p
}

// Gateway starts a gateway on addr in front of every mailbox replica and
// the bridges at bridges (comma-separated), and waits until it answers
// /healthz.
func (s *Split) Gateway(addr, bridges string) *testkit.Proc {
	s.t.Helper()
	p := testkit.Start(s.t, s.bins["gateway"], "--dev", "--listen", addr, "--registry", s.RegAddr,
		"--mailbox", s.MailboxAddrs(), "--bridge", bridges)
	testkit.Eventually(s.t, "the gateway on "+addr+" to answer /healthz", StartTimeout, func() bool {
		res, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			res.Body.Close()
		}
		return err == nil && res.StatusCode == http.StatusOK
	})
	return p
}
