package app_test

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-run/switchboard/kit/testkit"
)

// certs suite --replicas gives each replica a key of its own under the
// service's identity, naming both the replica and the service.
func TestCertsSuiteMintsALeafPerReplica(t *testing.T) {
	t.Parallel()
	bin := testkit.Build(t, module+"cli/cmd/switchboard")
	dir := t.TempDir()
	if _, stderr, code := run(t, bin, "certs", "suite", "--dir", dir, "--replicas", "nats=3,mailbox=2"); code != 0 {
		t.Fatalf("certs suite --replicas: %s", stderr)
	}
	keys := map[string]string{}
	for _, replica := range []string{"nats-1", "nats-2", "nats-3", "mailbox-1", "mailbox-2"} {
		service, _, _ := strings.Cut(replica, "-")
		leaf := readCert(t, filepath.Join(dir, replica, "cert.pem"))
		if leaf.Subject.CommonName != service {
			t.Errorf("%s's leaf is CN=%s; want the service's identity %s", replica, leaf.Subject.CommonName, service)
		}
		for _, host := range []string{replica, service, "localhost"} {
			if err := leaf.VerifyHostname(host); err != nil {
				t.Errorf("%s's leaf does not name %s: %v", replica, host, err)
			}
		}
		key, err := os.ReadFile(filepath.Join(dir, replica, "key.pem"))
		if err != nil {
			t.Fatal(err)
		}
		if other, ok := keys[string(key)]; ok {
			t.Errorf("%s and %s share a key", replica, other)
		}
		keys[string(key)] = replica
	}
	for _, gone := range []string{"nats", "mailbox", "nats-4", "mailbox-3"} {
		if _, err := os.Stat(filepath.Join(dir, gone)); err == nil {
			t.Errorf("certs suite --replicas nats=3,mailbox=2 minted %s", gone)
		}
	}
	// Services without replicas keep their one directory.
	if _, err := os.Stat(filepath.Join(dir, "registry", "cert.pem")); err != nil {
		t.Errorf("the registry, with no replicas asked for, has no leaf: %v", err)
	}

	for _, tc := range []struct{ replicas, want string }{
		{"example-host=2", `"example-host" is no service the suite's peers dial`},
		{"mailbox=0", `"0" is not a count from 1 to 9`},
		{"mailbox", `want service=N`},
		{"mailbox=2,mailbox=3", "names mailbox twice"},
	} {
		_, stderr, code := run(t, bin, "certs", "suite", "--dir", t.TempDir(), "--replicas", tc.replicas)
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("certs suite --replicas %s: exit %d %s; want an error saying %s", tc.replicas, code, stderr, tc.want)
		}
	}
}

func readCert(t *testing.T, file string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		t.Fatalf("%s holds no PEM block", file)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
