package certs

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestMintedLeafChainsToItsCAAndKeysArePrivate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca, err := MintCA("ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := ca.Write(dir); err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Mint(LeafSpec{Name: "laptop", Grade: "service", Hosts: []string{"127.0.0.1", "registry"}, Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := leaf.Write(dir, "laptop"); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"ca-key.pem", "laptop-key.pem"} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", f, st.Mode().Perm())
		}
	}
	loaded, err := LoadCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(leaf.CertPEM)
	cert, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(loaded.Cert)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatalf("leaf does not chain to the loaded CA: %v", err)
	}
	if cert.Subject.CommonName != "laptop" || cert.Subject.OrganizationalUnit[0] != "service" {
		t.Fatalf("subject = %v", cert.Subject)
	}
	if len(cert.IPAddresses) != 1 || len(cert.DNSNames) != 1 {
		t.Fatalf("SANs: %v %v", cert.IPAddresses, cert.DNSNames)
	}
	files := Files{CA: filepath.Join(dir, "ca.pem"), Cert: filepath.Join(dir, "laptop.pem"), Key: filepath.Join(dir, "laptop-key.pem")}
	if _, err := files.ServerConfig(); err != nil {
		t.Fatal(err)
	}
	if _, err := (Files{CA: "x"}).ClientConfig(""); err == nil {
		t.Fatal("missing cert and key were accepted")
	}
}

// Only a service's leaf serves and calls; a host's, a driver's, an admin's
// or a scraper's only calls, and names no host; a serving leaf only
// serves, and takes no grade.
func TestOnlyAServicesLeafServes(t *testing.T) {
	t.Parallel()
	ca, err := MintCA("ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	verifies := func(l *Leaf, usage x509.ExtKeyUsage) bool {
		b, _ := pem.Decode(l.CertPEM)
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{usage}})
		return err == nil
	}
	for _, tc := range []struct {
		spec          LeafSpec
		serves, calls bool
	}{
		{LeafSpec{Name: "registry", Grade: "service", Hosts: []string{"localhost"}}, true, true},
		{LeafSpec{Name: "laptop", Grade: "host"}, false, true},
		{LeafSpec{Name: "alice", Grade: "driver"}, false, true},
		{LeafSpec{Name: "ops", Grade: "admin"}, false, true},
		{LeafSpec{Name: "prometheus", Grade: "scrape"}, false, true},
		{LeafSpec{Name: "laptop", Serving: true, Hosts: []string{"laptop"}}, true, false},
	} {
		tc.spec.Validity = time.Hour
		l, err := ca.Mint(tc.spec)
		if err != nil {
			t.Fatalf("%+v: %v", tc.spec, err)
		}
		if verifies(l, x509.ExtKeyUsageServerAuth) != tc.serves || verifies(l, x509.ExtKeyUsageClientAuth) != tc.calls {
			t.Errorf("%s (%s, serving %v): serves %v, calls %v; want %v, %v", tc.spec.Name, tc.spec.Grade, tc.spec.Serving,
				verifies(l, x509.ExtKeyUsageServerAuth), verifies(l, x509.ExtKeyUsageClientAuth), tc.serves, tc.calls)
		}
	}
	for _, spec := range []LeafSpec{{Name: "laptop", Grade: "host", Hosts: []string{"localhost"}}, {Name: "x", Grade: "host", Serving: true}} {
		if _, err := ca.Mint(spec); err == nil {
			t.Errorf("minted %+v", spec)
		}
	}
}

// A process directory holds the CA's certificate, the leaf and its key —
// never the CA's key — and can be written again whatever is there.
func TestWriteDirHoldsOneProcessesMaterialOnly(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	ca, err := MintCA("ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Mint(LeafSpec{Name: "bridge", Grade: "service", Hosts: []string{"bridge"}, Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "bridge")
	var owner *Owner
	if os.Geteuid() == 0 {
		owner = &Owner{UID: 65534, GID: 65534}
	}
	for range 2 { // the second time over what the first wrote
		if err := leaf.WriteDir(dir, ca, owner); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "ca.pem cert.pem key.pem" {
		t.Fatalf("the directory holds %v; want ca.pem cert.pem key.pem", names)
	}
	for name, mode := range map[string]os.FileMode{"": 0o700, KeyFile: 0o600, CertFile: 0o644, CAFile: 0o644} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != mode {
			t.Errorf("%s/%s has mode %04o, want %04o", filepath.Base(dir), name, st.Mode().Perm(), mode)
		}
		if s := st.Sys().(*syscall.Stat_t); owner != nil && (int(s.Uid) != owner.UID || int(s.Gid) != owner.GID) {
			t.Errorf("%s/%s belongs to %d:%d, want %d:%d", filepath.Base(dir), name, s.Uid, s.Gid, owner.UID, owner.GID)
		}
	}
	if _, err := DirFiles(dir).ServerConfig(); err != nil {
		t.Fatalf("the directory's files do not load: %v", err)
	}
}

func TestParseOwner(t *testing.T) {
	t.Parallel()
	if o, err := ParseOwner("65532:65533"); err != nil || *o != (Owner{65532, 65533}) {
		t.Errorf("ParseOwner(65532:65533) = %v, %v", o, err)
	}
	for _, bad := range []string{"nonroot", "65532", "a:b", "-1:0", ""} {
		if _, err := ParseOwner(bad); err == nil || !strings.Contains(err.Error(), "is not UID:GID") {
			t.Errorf("ParseOwner(%q) = %v", bad, err)
		}
	}
}
