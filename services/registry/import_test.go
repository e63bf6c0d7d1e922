package registry_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/registry"
	"github.com/switchboard-run/switchboard/services/registry/registrytest"
)

// `registry --import` copies an earlier version's registry.db into NATS
// once and renames it: the sets, memberships and tokens are served (a
// token minted then still authenticates), and a restart with the same flag
// keeps them and leaves the imported file alone.
func TestImportBringsAnEarlierRegistryDBAlong(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := registrytest.WriteEarlier(dir, registrytest.Sample); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "registry.db")
	bin := testkit.Build(t, "github.com/switchboard-run/switchboard/services/registry/cmd/registry")
	ns := startNATS(t)
	addr := testkit.FreeAddr(t)
	reg := registryv1.NewRegistryServiceClient(testkit.Dial(t, addr))
	start := func() *testkit.Proc {
		p := testkit.Start(t, bin, "--dev", "--listen", addr, "--nats", ns.ClientURL(), "--import", db)
		testkit.WaitHealthy(t, addr, registryv1.RegistryService_ServiceDesc.ServiceName, 20*time.Second)
		return p
	}
	p := start()
	registrytest.CheckSample(t, reg)
	imported, err := os.ReadFile(db + ".imported")
	if err != nil {
		t.Fatalf("the imported file was not renamed: %v", err)
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Fatalf("%s is still there after the import: %v", db, err)
	}

	if err := p.Stop(10 * time.Second); err != nil {
		t.Fatalf("the registry did not stop cleanly: %v\n%s", err, p.Output())
	}
	start() // the flag left in place, as a service's command line keeps it
	registrytest.CheckSample(t, reg)
	if again, err := os.ReadFile(db + ".imported"); err != nil || string(again) != string(imported) {
		t.Fatalf("a second start with --import changed %s.imported (%d bytes, were %d): %v", db, len(again), len(imported), err)
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Fatalf("a second start with --import left %s behind: %v", db, err)
	}
}

// `--import` of a file that is not there (and was not imported before) is
// refused with a sentence naming it, rather than creating an empty one.
func TestImportOfAFileThatIsNotThereIsRefused(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "registry.db")
	var stderr bytes.Buffer
	// A registry that wrongly starts serves until the deadline, and Main
	// then returns without the refusal.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := registry.Main(ctx, []string{"--dev", "--listen", "127.0.0.1:0", "--nats", startNATS(t).ClientURL(), "--import", missing}, &stderr)
	want := "--import " + missing + ": there is no such file"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Main = %v, want an error saying %q", err, want)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatalf("the refused import left %s behind: %v", missing, err)
	}
}
