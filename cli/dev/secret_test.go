package dev

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/process"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// Each run draws a secret, writes it where only its user reads it, prints
// it once in the console's link, and takes a caller's word only with it;
// the next run's is another, and the file goes when the run ends.
func TestEachRunTakesWordsOnlyWithItsOwnSecret(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	file := filepath.Join(data, process.DevSecretFile)
	var secrets []string
	for range 2 {
		var console testkit.SyncBuffer
		serveWith(t, Options{DataDir: data, Console: &console}, func(cc *grpc.ClientConn) {
			fi, err := os.Stat(file)
			if err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("the secret's file: %v, %v; want mode 0600", fi, err)
			}
			secret := testkit.DevSecret(t, data)
			secrets = append(secrets, secret)
			if !strings.Contains(console.String(), "/console/#dev-secret="+secret+"\n") {
				t.Errorf("the console's link is not printed with the secret:\n%s", console.String())
			}
			// cc carries the secret (serveWith); a connection without it
			// names an admin in vain.
			if _, err := registryv1.NewRegistryServiceClient(cc).ListTokens(testkit.As("me", identity.Admin), &registryv1.ListTokensRequest{}); err != nil {
				t.Fatalf("a call with the secret: %v", err)
			}
			bare := testkit.Dial(t, strings.TrimPrefix(cc.Target(), "passthrough:///"))
			_, err = registryv1.NewRegistryServiceClient(bare).ListTokens(testkit.As("me", identity.Admin), &registryv1.ListTokensRequest{})
			if status.Code(err) != codes.Unauthenticated || !strings.HasPrefix(status.Convert(err).Message(), "this dev-mode suite takes calls only with its per-run secret") {
				t.Fatalf("a call without the secret: %v; want it refused for want of the secret", err)
			}
		})
		if _, err := os.Stat(file); !os.IsNotExist(err) {
			t.Errorf("the secret outlived its run: %v", err)
		}
	}
	if len(secrets) != 2 || secrets[0] == secrets[1] {
		t.Fatalf("two runs had secrets %q; want two different ones", secrets)
	}
}
