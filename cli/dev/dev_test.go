package dev

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/switchboard-run/switchboard/kit/testkit"
)

// A service that cannot be built ends Run with its error and leaves both
// addresses free to listen on again.
func TestAFailedStartLeavesNoListenerBehind(t *testing.T) {
	t.Parallel()
	notADir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notADir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	grpcAddr, httpAddr := testkit.FreeAddr(t), testkit.FreeAddr(t)
	err := Run(context.Background(), Options{GRPC: grpcAddr, HTTP: httpAddr, DataDir: notADir,
		Log:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		Ready: func(string, string) { t.Error("Ready was called for a suite that did not start") }})
	if err == nil {
		t.Fatal("Run started with a data directory that is a file")
	}
	for _, addr := range []string{grpcAddr, httpAddr} {
		lis, err := net.Listen("tcp", addr)
		if err != nil {
			t.Errorf("%s is still held after the failed start: %v", addr, err)
			continue
		}
		lis.Close()
	}
}
