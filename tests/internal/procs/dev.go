package procs

import (
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/process"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// Dev is the embedded suite, `switchboard dev`, as a process with its
// state under Data: killed and started again, it comes back on the same
// addresses and the same storage.
type Dev struct {
	t    *testing.T
	bin  string
	args []string

	Data, GRPCAddr, HTTPAddr string
	Proc                     *testkit.Proc
	Reg                      registryv1.RegistryServiceClient
	MB                       mailboxv1.MailboxServiceClient
	Bridge                   bridgev1.BridgeServiceClient
	// Secret is the current run's dev secret, which every call carries
	// (SecretFile holds it, for a process the test starts).
	Secret, SecretFile string

	cc *grpc.ClientConn
}

// StartDev runs `switchboard dev` with a fresh --data and args besides, and
// waits until it serves.
func StartDev(t *testing.T, args ...string) *Dev {
	t.Helper()
	d := &Dev{t: t, bin: testkit.Build(t, Module+"cli/cmd/switchboard"), args: args,
		Data: t.TempDir(), GRPCAddr: testkit.FreeAddr(t), HTTPAddr: testkit.FreeAddr(t)}
	d.SecretFile = filepath.Join(d.Data, process.DevSecretFile)
	d.Start()
	return d
}

// Start starts the suite (again) on its addresses and --data, waits until
// the mailbox serves, and dials it with the run's secret (each start draws
// a new one).
func (d *Dev) Start() {
	d.t.Helper()
	d.Proc = testkit.Start(d.t, d.bin, append([]string{"dev", "--grpc", d.GRPCAddr, "--http", d.HTTPAddr, "--data", d.Data}, d.args...)...)
	testkit.WaitHealthy(d.t, d.GRPCAddr, mailboxv1.MailboxService_ServiceDesc.ServiceName, StartTimeout)
	d.Secret = testkit.DevSecret(d.t, d.Data)
	if d.cc != nil {
		d.cc.Close()
	}
	d.cc = testkit.DialDev(d.t, d.GRPCAddr, d.Secret)
	d.Reg, d.MB = registryv1.NewRegistryServiceClient(d.cc), mailboxv1.NewMailboxServiceClient(d.cc)
	d.Bridge = bridgev1.NewBridgeServiceClient(d.cc)
}

// Host starts `switchboard host` serving tools (a tools file's JSON) as
// client, advertising to and following the suite; when the suite restarts
// it redials on its own.
func (d *Dev) Host(t *testing.T, client, tools string) *testkit.Proc {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tools.json")
	if err := os.WriteFile(path, []byte(tools), 0o644); err != nil {
		t.Fatal(err)
	}
	return testkit.Start(t, d.bin, "host", "--dev", "--dev-secret-file", d.SecretFile, "--client", client, "--tools", path, "--registry", d.GRPCAddr, "--mailbox", d.GRPCAddr)
}
