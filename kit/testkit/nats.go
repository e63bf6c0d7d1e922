package testkit

import (
	"os"

	"github.com/switchboard-run/switchboard/kit/natsserver"
)

// NATS runs a real NATS server with JetStream for the test: in process, and
// on a loopback port for the processes the test starts (pass ClientURL as
// their --nats). It stops, and its storage goes, when the test ends.
func NATS(t TB) *natsserver.Server {
	t.Helper()
	dir, err := os.MkdirTemp("", "switchboard-nats-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ns, err := natsserver.Start(natsserver.Options{Dir: dir, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Shutdown)
	return ns
}
