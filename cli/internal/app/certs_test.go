package app_test

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/switchboard-run/switchboard/kit/testkit"
)

// certs init and leaf keep the CA's key at the top of --dir and write each
// leaf into a directory of its own, which can name nothing above it.
func TestCertsWritesADirectoryPerLeafAndTheCAKeyNowhereElse(t *testing.T) {
	t.Parallel()
	bin := testkit.Build(t, module+"cli/cmd/switchboard")
	dir := t.TempDir()
	if _, stderr, code := run(t, bin, "certs", "init", "--dir", dir); code != 0 {
		t.Fatalf("certs init: %s", stderr)
	}
	if _, stderr, code := run(t, bin, "certs", "leaf", "--dir", dir, "--name", "alice"); code != 0 {
		t.Fatalf("certs leaf: %s", stderr)
	}
	entries, err := os.ReadDir(filepath.Join(dir, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"ca.pem", "cert.pem", "key.pem"}) {
		t.Errorf("alice's directory holds %v; want ca.pem, cert.pem, key.pem", names)
	}
	for _, name := range []string{"..", "."} {
		_, stderr, code := run(t, bin, "certs", "leaf", "--dir", dir, "--name", name)
		if code == 0 || !strings.Contains(stderr, "cannot be a directory of its own") {
			t.Errorf("certs leaf --name %s: exit %d %s", name, code, stderr)
		}
	}
	if _, stderr, code := run(t, bin, "certs", "leaf", "--dir", dir, "--name", "bob", "--owner", "nonroot"); code == 0 || !strings.Contains(stderr, `--owner: owner "nonroot" is not UID:GID`) {
		t.Errorf("certs leaf --owner nonroot: exit %d %s", code, stderr)
	}
}

// certs suite mints the scraper's leaf too: a client of grade scrape (which
// reads metrics and nothing else), named for nothing since it serves
// nothing, in a directory given to the user Prometheus runs as.
func TestCertsSuiteMintsThePrometheusLeaf(t *testing.T) {
	t.Parallel()
	bin := testkit.Build(t, module+"cli/cmd/switchboard")
	dir := t.TempDir()
	// Root may give directories away; anyone else gives them to itself.
	services, scraper := "65532:65532", "65534:65534"
	if os.Geteuid() != 0 {
		services = fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid())
		scraper = services
	}
	if _, stderr, code := run(t, bin, "certs", "suite", "--dir", dir, "--owner", services, "--prometheus-owner", scraper); code != 0 {
		t.Fatalf("certs suite: %s", stderr)
	}
	leaf := readLeaf(t, filepath.Join(dir, "prometheus", "cert.pem"))
	if leaf.Subject.CommonName != "prometheus" || !slices.Equal(leaf.Subject.OrganizationalUnit, []string{"scrape"}) {
		t.Errorf("the prometheus leaf is CN=%s OU=%v; want CN=prometheus OU=scrape", leaf.Subject.CommonName, leaf.Subject.OrganizationalUnit)
	}
	if len(leaf.DNSNames)+len(leaf.IPAddresses) > 0 {
		t.Errorf("the prometheus leaf names %v %v; it serves nothing", leaf.DNSNames, leaf.IPAddresses)
	}
	if !slices.Equal(leaf.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) {
		t.Errorf("the prometheus leaf has key usages %v; it must be a client's only", leaf.ExtKeyUsage)
	}
	// The example host serves /metrics with a serving leaf that names it;
	// its own leaf, a host's, serves nothing.
	if err := readLeaf(t, filepath.Join(dir, "example-host", "metrics-cert.pem")).VerifyHostname("example-host"); err != nil {
		t.Errorf("a scraper dialing example-host could not verify it: %v", err)
	}
	if host := readLeaf(t, filepath.Join(dir, "example-host", "cert.pem")); !slices.Equal(host.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) ||
		len(host.DNSNames)+len(host.IPAddresses) > 0 {
		t.Errorf("the example host's own leaf has key usages %v and names %v %v; a host's leaf is a client's only", host.ExtKeyUsage, host.DNSNames, host.IPAddresses)
	}
	for name, want := range map[string]string{"prometheus": scraper, "registry": services} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if got := fmt.Sprintf("%d:%d", st.Uid, st.Gid); got != want {
			t.Errorf("%s's directory belongs to %s; want %s", name, got, want)
		}
	}
	_, stderr, code := run(t, bin, "certs", "suite", "--dir", t.TempDir(), "--prometheus-owner", "nobody")
	if code == 0 || !strings.Contains(stderr, `--prometheus-owner: owner "nobody" is not UID:GID`) {
		t.Errorf("certs suite --prometheus-owner nobody: exit %d %s", code, stderr)
	}
}

// readLeaf parses the one certificate of a PEM file.
func readLeaf(t *testing.T, file string) *x509.Certificate {
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
		t.Fatalf("%s: %v", file, err)
	}
	return c
}
