package dev

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/lib/logging"
	"github.com/switchboard-run/switchboard/kit/suite/grpcclient"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/mailbox"
	"github.com/switchboard-run/switchboard/services/registry/registrytest"
)

// The registry.db an earlier version left in --data is imported by itself
// at the first start and renamed; the next start on the same --data serves
// the same state from NATS and leaves the imported file alone.
func TestAnEarlierRegistryDBInTheDataDirIsImportedOnce(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	if err := registrytest.WriteEarlier(data, registrytest.Sample); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(data, "registry.db")
	var imported []byte
	for start := range 2 {
		serve(t, data, func(cc *grpc.ClientConn) {
			registrytest.CheckSample(t, registryv1.NewRegistryServiceClient(cc))
		})
		if _, err := os.Stat(db); !os.IsNotExist(err) {
			t.Fatalf("start %d left %s in place: %v", start+1, db, err)
		}
		b, err := os.ReadFile(db + ".imported")
		if err != nil || (start > 0 && string(b) != string(imported)) {
			t.Fatalf("after start %d, %s.imported: %d bytes, %v; want the file of the earlier version", start+1, db, len(b), err)
		}
		imported = b
	}
}

// serve runs the suite on data until check, given a connection to its
// gRPC address, has run.
func serve(t *testing.T, data string, check func(*grpc.ClientConn)) {
	t.Helper()
	serveWith(t, Options{DataDir: data}, check)
}

// serveWith runs the suite with o (its addresses, log, bounds and Ready
// filled in) until check has run.
func serveWith(t *testing.T, o Options, check func(*grpc.ClientConn)) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	ready := make(chan string, 1)
	done := make(chan error, 1)
	o.GRPC, o.HTTP, o.Log = "127.0.0.1:0", "127.0.0.1:0", logging.Discard()
	o.Mailbox = mailbox.Bounds{TTL: time.Hour, MaxQueued: 100, MaxSlots: 1000, MaxCaptureBytes: 1 << 20}
	o.Ready = func(grpcAddr, _ string) { ready <- grpcAddr }
	go func() { done <- Run(ctx, o) }()
	select {
	case addr := <-ready:
		cc, err := grpcclient.Dial(addr, nil, grpc.WithPerRPCCredentials(identity.DevSecret(testkit.DevSecret(t, o.DataDir))))
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		check(cc)
	case err := <-done:
		t.Fatalf("the suite did not start: %v", err)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("the suite stopped with %v", err)
	}
}
