package deploy

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-run/switchboard/kit/testkit"
)

// The certs step's own command mints the material; every container's TLS
// flags must then name a leaf that fits its use: the right identity and
// grade, and the names its peers and its healthcheck dial.
func TestComposeCertificatesFitTheirUse(t *testing.T) {
	t.Parallel()
	p := loadCompose(t, nil)
	svcs := services(t, p)
	bin := testkit.Build(t, switchboardPkg)
	certs := svcs["certs"]
	vol := t.TempDir()

	// Run the step as compose runs it, into vol; a second run (the next
	// `docker compose up`) must succeed and keep the CA.
	mint := func() []byte {
		t.Helper()
		mintInto(t, bin, certs, vol)
		ca, err := os.ReadFile(filepath.Join(vol, "ca.pem"))
		if err != nil {
			t.Fatal(err)
		}
		return ca
	}
	if first, second := mint(), mint(); !bytes.Equal(first, second) {
		t.Fatal("running the certs step again replaced the CA; every leaf signed before would stop working")
	}

	for name, s := range svcs {
		if name == "certs" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			local := func(path string) string { return certsLocal(t, certs, s, path, vol) }
			leaf, roots := loadLeaf(t, local(s.flags["tls-ca"]), local(s.flags["tls-cert"]), local(s.flags["tls-key"]))
			if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
				t.Fatalf("%s's certificate does not verify against %s: %v", name, s.flags["tls-ca"], err)
			}
			wantOU := "service"
			if s.sub[0] == "host" {
				wantOU = "host" // a tool host: its CN is the client it hosts as
			}
			if leaf.Subject.CommonName != name || !slices.Equal(leaf.Subject.OrganizationalUnit, []string{wantOU}) {
				t.Errorf("%s presents CN=%s OU=%v; want CN=%s OU=%s", name, leaf.Subject.CommonName, leaf.Subject.OrganizationalUnit, name, wantOU)
			}
			for _, f := range peerFlags {
				addr, ok := s.flags[f]
				if !ok {
					continue
				}
				host, _, _ := net.SplitHostPort(addr)
				peer := svcs[host]
				peerLocal := func(path string) string { return certsLocal(t, certs, peer, path, vol) }
				peerLeaf, _ := loadLeaf(t, peerLocal(peer.flags["tls-ca"]), peerLocal(peer.flags["tls-cert"]), peerLocal(peer.flags["tls-key"]))
				if err := peerLeaf.VerifyHostname(host); err != nil {
					t.Errorf("%s dials %s, but %s's certificate does not name it: %v", name, addr, host, err)
				}
			}
			if hc := s.cfg.HealthCheck; hc != nil && !hc.Disable && len(hc.Test) > 3 {
				hu, err := help(bin, "health")
				if err != nil {
					t.Fatal(err)
				}
				hv, err := hu.parse(hc.Test[3:], nil)
				if err != nil {
					t.Fatalf("healthcheck %q: %v", hc.Test, err)
				}
				if strings.HasPrefix(hv["http"], "http://") {
					return // a NATS node's /healthz on loopback: no TLS
				}
				if err := leaf.VerifyHostname(hv["tls-server-name"]); err != nil {
					t.Errorf("the healthcheck checks the name %q: %v", hv["tls-server-name"], err)
				}
			}
			if s.sub[0] == "gateway" {
				// People reach the published port as localhost or 127.0.0.1.
				for _, h := range []string{"localhost", "127.0.0.1"} {
					if err := leaf.VerifyHostname(h); err != nil {
						t.Errorf("curl https://%s:8080 would fail: %v", h, err)
					}
				}
			}
		})
	}

	t.Run("the admin certificate the docs use is minted", func(t *testing.T) {
		t.Parallel()
		dir := filepath.Join(vol, "admin")
		admin, _ := loadLeaf(t, filepath.Join(dir, "ca.pem"), filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"))
		if admin.Subject.CommonName != "admin" || first(admin.Subject.OrganizationalUnit) != "admin" {
			t.Errorf("the admin certificate is CN=%s OU=%v; want CN=admin, OU=admin", admin.Subject.CommonName, admin.Subject.OrganizationalUnit)
		}
	})
}

// loadLeaf loads a certificate with its key (they must match) and the CA pool.
func loadLeaf(t *testing.T, caFile, certFile, keyFile string) (*x509.Certificate, *x509.CertPool) {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatalf("%s and %s: %v", filepath.Base(certFile), filepath.Base(keyFile), err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(caPEM)
	if block == nil {
		t.Fatalf("%s holds no PEM block", caFile)
	}
	ca, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	return leaf, roots
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}
