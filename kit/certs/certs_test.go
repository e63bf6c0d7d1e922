package certs

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
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
	leaf, err := ca.Mint(LeafSpec{Name: "laptop", Grade: "host", Hosts: []string{"127.0.0.1", "registry"}, Validity: time.Hour})
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
	if cert.Subject.CommonName != "laptop" || cert.Subject.OrganizationalUnit[0] != "host" {
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
