package certs

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// Files names the PEM files of one party: its leaf, its key, and the CA
// that signs every peer.
type Files struct {
	CA   string
	Cert string
	Key  string
}

// Empty reports whether no file is named (dev mode).
func (f Files) Empty() bool { return f.CA == "" && f.Cert == "" && f.Key == "" }

// check says which file is missing, so the error names the flag to set.
func (f Files) check() error {
	var missing []string
	if f.CA == "" {
		missing = append(missing, "the CA certificate")
	}
	if f.Cert == "" {
		missing = append(missing, "the certificate")
	}
	if f.Key == "" {
		missing = append(missing, "the key")
	}
	if len(missing) > 0 {
		return fmt.Errorf("mutual TLS needs the CA certificate, a certificate and its key; missing %v", missing)
	}
	return nil
}

func (f Files) load() (tls.Certificate, *x509.CertPool, error) {
	if err := f.check(); err != nil {
		return tls.Certificate{}, nil, err
	}
	pair, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("loading %s and %s: %w", f.Cert, f.Key, err)
	}
	caPEM, err := os.ReadFile(f.CA)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("reading the CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return tls.Certificate{}, nil, fmt.Errorf("%s holds no PEM certificate", f.CA)
	}
	return pair, pool, nil
}

// ServerConfig is the TLS config of a suite listener. A client certificate
// is verified against the CA when given; a call without one reaches the
// identity guard, which refuses it as UNAUTHENTICATED with a sentence rather
// than a bare handshake failure.
func (f Files) ServerConfig() (*tls.Config, error) {
	pair, pool, err := f.load()
	if err != nil {
		return nil, err
	}
	return &tls.Config{
		Certificates: []tls.Certificate{pair},
		ClientCAs:    pool,
		ClientAuth:   tls.VerifyClientCertIfGiven,
		MinVersion:   tls.VersionTLS13,
	}, nil
}

// ClientConfig is the TLS config for dialing a suite peer. serverName
// overrides the name checked against the peer's certificate (empty: the
// dialed host).
func (f Files) ClientConfig(serverName string) (*tls.Config, error) {
	pair, pool, err := f.load()
	if err != nil {
		return nil, err
	}
	return &tls.Config{
		Certificates: []tls.Certificate{pair},
		RootCAs:      pool,
		ServerName:   serverName,
		MinVersion:   tls.VersionTLS13,
	}, nil
}

// ErrNoTLS is returned where TLS material is required and none was named.
var ErrNoTLS = errors.New("no TLS material named: pass --tls-ca, --tls-cert and --tls-key, or --dev for loopback-only dev mode")
