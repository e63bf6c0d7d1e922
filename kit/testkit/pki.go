package testkit

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/switchboard-run/switchboard/kit/certs"
)

// PKI is a CA and the leaves it signed, written to a directory of their
// own: the mutual-TLS material of a production-mode test.
type PKI struct {
	Dir string
	CA  *certs.CA
}

// NewPKI mints a CA into a fresh directory, removed when the test ends.
func NewPKI(t TB) *PKI {
	t.Helper()
	dir, err := os.MkdirTemp("", "switchboard-pki-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ca, err := certs.MintCA("test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := ca.Write(dir); err != nil {
		t.Fatal(err)
	}
	return &PKI{Dir: dir, CA: ca}
}

// Leaf mints a leaf named name with OU grade ("" for none) that serves as
// 127.0.0.1 and localhost, and returns its files.
func (p *PKI) Leaf(t TB, name, grade string) certs.Files {
	t.Helper()
	l, err := p.CA.Mint(certs.LeafSpec{Name: name, Grade: grade, Hosts: []string{"127.0.0.1", "localhost"}, Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	file := strings.ReplaceAll(name, " ", "-") + "-" + grade
	if err := l.Write(p.Dir, file); err != nil {
		t.Fatal(err)
	}
	return certs.Files{CA: filepath.Join(p.Dir, "ca.pem"), Cert: filepath.Join(p.Dir, file+".pem"), Key: filepath.Join(p.Dir, file+"-key.pem")}
}

// ServerTLS is the listener config of a leaf named name with OU grade.
func (p *PKI) ServerTLS(t TB, name, grade string) *tls.Config {
	t.Helper()
	cfg, err := p.Leaf(t, name, grade).ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// ClientTLS is the dialing config of a leaf named name with OU grade.
func (p *PKI) ClientTLS(t TB, name, grade string) *tls.Config {
	t.Helper()
	cfg, err := p.Leaf(t, name, grade).ClientConfig("")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
