package procs

import (
	"os"
	"path/filepath"
	"testing"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
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
}

// StartDev runs `switchboard dev` with a fresh --data and args besides, and
// waits until it serves.
func StartDev(t *testing.T, args ...string) *Dev {
	t.Helper()
	d := &Dev{t: t, bin: testkit.Build(t, Module+"cli/cmd/switchboard"), args: args,
		Data: t.TempDir(), GRPCAddr: testkit.FreeAddr(t), HTTPAddr: testkit.FreeAddr(t)}
	cc := testkit.Dial(t, d.GRPCAddr)
	d.Reg, d.MB = registryv1.NewRegistryServiceClient(cc), mailboxv1.NewMailboxServiceClient(cc)
	d.Start()
	return d
}

// Start starts the suite (again) on its addresses and --data, and waits
// until the mailbox serves.
func (d *Dev) Start() {
	d.t.Helper()
	d.Proc = testkit.Start(d.t, d.bin, append([]string{"dev", "--grpc", d.GRPCAddr, "--http", d.HTTPAddr, "--data", d.Data}, d.args...)...)
	testkit.WaitHealthy(d.t, d.GRPCAddr, mailboxv1.MailboxService_ServiceDesc.ServiceName, StartTimeout)
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
	return testkit.Start(t, d.bin, "host", "--dev", "--client", client, "--tools", path, "--registry", d.GRPCAddr, "--mailbox", d.GRPCAddr)
}
