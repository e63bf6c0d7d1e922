package procs

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard-run/switchboard/cli/dev"
)

// RunDev runs the embedded suite in this process with o until the test
// ends (an error it stops with fails the test), on loopback ports of its
// own unless o names them; it returns the gRPC and HTTP addresses once the
// suite serves.
func RunDev(t testing.TB, o dev.Options) (grpcAddr, httpAddr string) {
	t.Helper()
	if o.GRPC == "" {
		o.GRPC = "127.0.0.1:0"
	}
	if o.HTTP == "" {
		o.HTTP = "127.0.0.1:0"
	}
	type addrs struct{ grpc, http string }
	ready := make(chan addrs, 1)
	o.Ready = func(g, h string) { ready <- addrs{g, h} }
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- dev.Run(ctx, o) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("the embedded suite stopped with %v", err)
		}
	})
	select {
	case a := <-ready:
		return a.grpc, a.http
	case err := <-done:
		done <- nil // said here; the cleanup need not say it again
		t.Fatalf("the embedded suite did not start: %v", err)
	case <-time.After(StartTimeout):
		t.Fatalf("the embedded suite did not serve within %v", StartTimeout)
	}
	return "", ""
}
