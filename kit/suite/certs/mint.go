// Package certs mints and loads the suite's mutual-TLS material with Go's
// crypto/x509 (no openssl): a CA, and leaves whose subject CN is an identity
// and whose OU is its grade (docs/design.md §4).
package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// CA is a certificate authority that can sign leaves.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
}

// Leaf is a signed certificate and its key, PEM-encoded.
type Leaf struct {
	CertPEM []byte
	KeyPEM  []byte
}

// MintCA creates a self-signed CA valid for the given duration.
func MintCA(name string, validity time.Duration) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the CA key: %w", err)
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: name, Organization: []string{"switchboard"}},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("signing the CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key}, nil
}

// LeafSpec describes a leaf to mint.
type LeafSpec struct {
	// Name is the identity: the subject CN.
	Name string
	// Grade is the OU: "host", "driver", "admin", "service" or "scrape"
	// (empty: no OU, a leaf every server refuses — tests mint one to prove
	// it).
	Grade string
	// Hosts are the DNS names and IP addresses the leaf serves as: only a
	// service's leaf, or a serving one, serves.
	Hosts []string
	// Serving mints a leaf that only serves (a tool host's metrics
	// listener): no grade, and usable by no client.
	Serving bool
	// Validity is how long the leaf is valid.
	Validity time.Duration
}

// ServiceGrade is the grade whose leaves serve as well as call: a suite
// service is both a server and a client of its peers.
const ServiceGrade = "service"

// usages are the uses of a leaf of spec: a service's both serves and
// calls, a serving leaf only serves, everyone else's only calls — a host's,
// a driver's or an admin's leaf cannot stand in for a server of the suite.
func (spec LeafSpec) usages() ([]x509.ExtKeyUsage, error) {
	switch {
	case spec.Serving && spec.Grade != "":
		return nil, fmt.Errorf("the serving leaf %q takes no grade (it has %q): it serves, and calls nobody", spec.Name, spec.Grade)
	case spec.Serving:
		return []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, nil
	case spec.Grade == ServiceGrade:
		return []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, nil
	case len(spec.Hosts) > 0:
		return nil, fmt.Errorf("the leaf of %q (grade %q) is a client's and serves as no name, so it takes no hosts (%v): only a service's leaf, or a serving one, serves", spec.Name, spec.Grade, spec.Hosts)
	}
	return []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, nil
}

// Mint signs a leaf: a service's serves and calls, a serving one only
// serves, any other only calls (see usages).
func (ca *CA) Mint(spec LeafSpec) (*Leaf, error) {
	if spec.Name == "" {
		return nil, errors.New("a leaf needs a name (its subject CN)")
	}
	usages, err := spec.usages()
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the key for %q: %w", spec.Name, err)
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	subject := pkix.Name{CommonName: spec.Name}
	if spec.Grade != "" {
		subject.OrganizationalUnit = []string{spec.Grade}
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      subject,
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(spec.Validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  usages,
	}
	for _, h := range spec.Hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return nil, fmt.Errorf("signing the leaf for %q: %w", spec.Name, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &Leaf{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// CertPEM is the CA certificate, PEM-encoded.
func (ca *CA) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw})
}

// Write stores the CA as ca.pem and ca-key.pem (0600) in dir.
func (ca *CA) Write(dir string) error {
	keyDER, err := x509.MarshalECPrivateKey(ca.Key)
	if err != nil {
		return err
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	return writePair(dir, "ca", ca.CertPEM(), keyPEM)
}

// Write stores the leaf as <name>.pem and <name>-key.pem (0600) in dir.
func (l *Leaf) Write(dir, name string) error {
	return writePair(dir, name, l.CertPEM, l.KeyPEM)
}

// WriteDir makes dir one process's directory (see DirFiles): the CA's
// certificate, never its key; the leaf; the leaf's key, 0600. The
// directory is 0700. With owner, the directory and its files are given to
// that user, so a process that runs as someone else than the writer can
// read them. Each file is replaced whole, so writing again works whatever
// the modes of what is there.
func (l *Leaf) WriteDir(dir string, ca *CA, owner *Owner) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		data []byte
		mode os.FileMode
	}{{CAFile, ca.CertPEM(), 0o644}, {CertFile, l.CertPEM, 0o644}, {KeyFile, l.KeyPEM, 0o600}} {
		if err := writeFile(filepath.Join(dir, f.name), f.data, f.mode, owner); err != nil {
			return err
		}
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return err
	}
	return owner.chown(dir)
}

// WriteMetrics puts the serving leaf l into the process directory dir, as
// MetricsCertFile and MetricsKeyFile (0600), given to owner as WriteDir
// gives the rest.
func (l *Leaf) WriteMetrics(dir string, owner *Owner) error {
	if err := writeFile(filepath.Join(dir, MetricsCertFile), l.CertPEM, 0o644, owner); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, MetricsKeyFile), l.KeyPEM, 0o600, owner)
}

// LoadCA reads a CA written by (*CA).Write.
func LoadCA(dir string) (*CA, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, "ca-key.pem"))
	if err != nil {
		return nil, err
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, fmt.Errorf("%s: ca.pem or ca-key.pem holds no PEM block", dir)
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s/ca.pem: %w", dir, err)
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s/ca-key.pem: %w", dir, err)
	}
	return &CA{Cert: cert, Key: key}, nil
}

func writePair(dir, name string, certPEM, keyPEM []byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, name+".pem"), certPEM, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name+"-key.pem"), keyPEM, 0o600)
}

// writeFile writes data to path through a temporary file renamed over it,
// with mode and owner set before the rename.
func writeFile(path string, data []byte, mode os.FileMode, owner *Owner) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // gone after the rename; a leftover otherwise
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), mode)
	}
	if err == nil {
		err = owner.chown(tmp.Name())
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	return err
}

func serialNumber() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("drawing a serial number: %w", err)
	}
	return n, nil
}
