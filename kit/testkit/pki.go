package testkit

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/switchboard-run/switchboard/kit/suite/certs"
)

// PKI is a CA kept in a directory, minting a process directory per leaf
// (certs.DirFiles: ca.pem, cert.pem, key.pem) beside it, as
// `switchboard certs` does: the mutual-TLS material of a production-mode
// test.
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
	return NewPKIIn(t, dir)
}

// NewPKIIn mints a CA into dir (a SharedDir, for a process that becomes
// another user and must still reach its material).
func NewPKIIn(t TB, dir string) *PKI {
	t.Helper()
	ca, err := certs.MintCA("test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := ca.Write(dir); err != nil {
		t.Fatal(err)
	}
	return &PKI{Dir: dir, CA: ca}
}

// Leaf mints a leaf named name with OU grade ("" for none) — a service's
// serving as 127.0.0.1 and localhost too — into a directory of its own
// under Dir, and returns its files.
func (p *PKI) Leaf(t TB, name, grade string) certs.Files {
	t.Helper()
	spec := certs.LeafSpec{Name: name, Grade: grade, Validity: time.Hour}
	if grade == certs.ServiceGrade {
		spec.Hosts = loopbackNames
	}
	l, err := p.CA.Mint(spec)
	if err != nil {
		t.Fatal(err)
	}
	// One name may be minted at several grades: each gets its directory.
	dir := filepath.Join(p.Dir, strings.ReplaceAll(name, " ", "-")+"."+grade)
	if err := l.WriteDir(dir, p.CA, nil); err != nil {
		t.Fatal(err)
	}
	return certs.DirFiles(dir)
}

// loopbackNames are the names a test's servers are dialed by.
var loopbackNames = []string{"127.0.0.1", "localhost"}

// Serving mints a serving leaf named name (no grade, serving as 127.0.0.1
// and localhost) beside the leaf f, as certs suite does for a tool host's
// metrics listener, and returns its certificate and key files.
func (p *PKI) Serving(t TB, name string, f certs.Files) (cert, key string) {
	t.Helper()
	l, err := p.CA.Mint(certs.LeafSpec{Name: name, Serving: true, Hosts: loopbackNames, Validity: time.Hour})
	if err == nil {
		err = l.WriteMetrics(filepath.Dir(f.Cert), nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(filepath.Dir(f.Cert), certs.MetricsCertFile), filepath.Join(filepath.Dir(f.Cert), certs.MetricsKeyFile)
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
	return Client(t, p.Leaf(t, name, grade))
}

// Client is the TLS config for dialing the suite as f.
func Client(t TB, f certs.Files) *tls.Config {
	t.Helper()
	c, err := f.ClientConfig("")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TLSFlags are the --tls-* flags naming f.
func TLSFlags(f certs.Files) []string {
	return []string{"--tls-ca", f.CA, "--tls-cert", f.Cert, "--tls-key", f.Key}
}

// SharedDir is a directory any user may enter, read and write, removed
// when the test ends: for a process that becomes another user (--run-as)
// and must still reach what the test put there — so that only a file's own
// mode stands between that user and the file.
func SharedDir(t TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "switchboard-shared-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}

// EnvMap reads what env prints (NAME=value lines) into a map.
func EnvMap(out string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			m[k] = v
		}
	}
	return m
}

// ParentEnv is the environment a test starts a parent process (a host, a
// bridge) with, to see that none of it reaches the parent's children: its
// TLS files named by their SWITCHBOARD_TLS_* fallbacks, and a secret.
func ParentEnv(f certs.Files, secret string) []string {
	return []string{"SWITCHBOARD_TLS_CA=" + f.CA, "SWITCHBOARD_TLS_CERT=" + f.Cert, "SWITCHBOARD_TLS_KEY=" + f.Key,
		"SWITCHBOARD_API_TOKEN=" + secret}
}

// CheckChildEnv fails the test when env, a child's environment, holds
// what its parent was started with (ParentEnv): the secret, a
// SWITCHBOARD_* variable other than the protocol's, or a value naming a
// file of dir (where the TLS material is). PWD may name dir: the child
// runs there.
func CheckChildEnv(t TB, env map[string]string, secret, dir string, protocol ...string) {
	t.Helper()
	for k, v := range env {
		leaked := v == secret || (strings.Contains(v, dir) && k != "PWD") ||
			(strings.HasPrefix(k, "SWITCHBOARD_") && !slices.Contains(protocol, k))
		if leaked {
			t.Fatalf("the child inherited %s=%s from its parent; its environment: %v", k, v, env)
		}
	}
}
