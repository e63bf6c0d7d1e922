// Package faults kills and restarts the suite's real processes on loopback
// and checks that nothing is lost and every failure says what happened.
package faults

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/grpcclient"
	"github.com/switchboard-run/switchboard/kit/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

const module = "github.com/switchboard-run/switchboard/"

// split is a split deployment whose processes a test may kill and start
// again on the same addresses.
type split struct {
	t                         *testing.T
	bins                      map[string]string
	nats                      string // the NATS server every process keeps its state in
	regAddr, mbAddr, httpAddr string
	regProc, mbProc, gwProc   *testkit.Proc
	reg                       registryv1.RegistryServiceClient
	mb                        mailboxv1.MailboxServiceClient
	conns                     []*grpc.ClientConn
}

func newSplit(t *testing.T) *split {
	t.Helper()
	s := &split{t: t, bins: map[string]string{}, nats: testkit.NATS(t).ClientURL(),
		regAddr: testkit.FreeAddr(t), mbAddr: testkit.FreeAddr(t), httpAddr: testkit.FreeAddr(t)}
	for _, c := range []string{"registry", "mailbox", "gateway", "host"} {
		s.bins[c] = testkit.Build(t, module+"services/"+c+"/cmd/"+c)
	}
	s.startRegistry()
	s.startMailbox()
	regConn, err := grpcclient.Dial(s.regAddr, nil)
	if err != nil {
		t.Fatal(err)
	}
	mbConn, err := grpcclient.Dial(s.mbAddr, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.conns = append(s.conns, regConn, mbConn)
	t.Cleanup(func() {
		for _, c := range s.conns {
			c.Close()
		}
	})
	s.reg = registryv1.NewRegistryServiceClient(regConn)
	s.mb = mailboxv1.NewMailboxServiceClient(mbConn)
	return s
}

func (s *split) startRegistry() {
	s.regProc = testkit.Start(s.t, s.bins["registry"], "--dev", "--listen", s.regAddr, "--nats", s.nats)
	testkit.WaitHealthy(s.t, s.regAddr, registryv1.RegistryService_ServiceDesc.ServiceName, 20*time.Second)
}

func (s *split) startMailbox() {
	s.mbProc = testkit.Start(s.t, s.bins["mailbox"], "--dev", "--listen", s.mbAddr, "--registry", s.regAddr, "--nats", s.nats)
	testkit.WaitHealthy(s.t, s.mbAddr, mailboxv1.MailboxService_ServiceDesc.ServiceName, 20*time.Second)
}

func (s *split) startGateway() {
	s.gwProc = testkit.Start(s.t, s.bins["gateway"], "--dev", "--listen", s.httpAddr, "--registry", s.regAddr,
		"--mailbox", s.mbAddr, "--bridge", s.regAddr)
}

// host starts a tool host process serving tools (a tools file's JSON) as
// client.
func (s *split) host(client, tools string) *testkit.Proc {
	s.t.Helper()
	path := filepath.Join(s.t.TempDir(), "tools.json")
	if err := os.WriteFile(path, []byte(tools), 0o644); err != nil {
		s.t.Fatal(err)
	}
	return testkit.Start(s.t, s.bins["host"], "--dev", "--client", client, "--tools", path,
		"--registry", s.regAddr, "--mailbox", s.mbAddr)
}

// waitPresent waits until the registry shows client present.
func (s *split) waitPresent(client string) {
	s.t.Helper()
	testkit.Eventually(s.t, client+" to be present", 20*time.Second, func() bool {
		res, err := s.reg.GetClient(driver(), &registryv1.GetClientRequest{Client: client})
		return err == nil && res.GetRow().GetPresent()
	})
}

func driver() context.Context {
	return testkit.As("driver", identity.Driver)
}
