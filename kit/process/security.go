package process

import (
	"crypto/tls"
	"errors"
	"flag"

	"github.com/switchboard-run/switchboard/kit/certs"
	"github.com/switchboard-run/switchboard/kit/identity"
)

// Security is how a process proves who it is and checks who calls it: dev
// mode (loopback, identity from metadata) or mutual TLS. It is the one place
// a process's TLS material is loaded from (ServerTLS, ClientTLS).
type Security struct {
	Dev   bool
	Files certs.Files
	// ServerName overrides the name checked on peers' certificates.
	ServerName string
}

// Register adds --dev, --tls-ca, --tls-cert, --tls-key and --tls-server-name.
func (s *Security) Register(fs *flag.FlagSet) {
	fs.BoolVar(&s.Dev, "dev", false, "dev mode: loopback only, identity from the switchboard-identity header; no TLS")
	fs.StringVar(&s.Files.CA, "tls-ca", "", "PEM file of the CA that signs every peer")
	fs.StringVar(&s.Files.Cert, "tls-cert", "", "PEM file of this process's certificate")
	fs.StringVar(&s.Files.Key, "tls-key", "", "PEM file of this process's key")
	fs.StringVar(&s.ServerName, "tls-server-name", "", "name to check on peers' certificates (default: the dialed host)")
}

// Check refuses a mixed or empty choice, naming what to pass.
func (s *Security) Check() error {
	switch {
	case s.Dev && !s.Files.Empty():
		return errors.New("--dev and --tls-* are exclusive: dev mode has no TLS")
	case !s.Dev && s.Files.Empty():
		return certs.ErrNoTLS
	}
	return nil
}

// ServerTLS is the TLS config of the process's listener, loaded from the
// named files; nil in dev mode, which serves plaintext on loopback.
func (s *Security) ServerTLS() (*tls.Config, error) {
	if s.Dev {
		return nil, nil
	}
	return s.Files.ServerConfig()
}

// ClientTLS is the TLS config for dialing the process's peers, loaded from
// the named files; nil in dev mode, which dials plaintext.
func (s *Security) ClientTLS() (*tls.Config, error) {
	if s.Dev {
		return nil, nil
	}
	return s.Files.ClientConfig(s.ServerName)
}

// Self is how a service named name calls its peers as itself: by its
// certificate in production, by naming itself (grade service) in dev mode.
func (s *Security) Self(name string) identity.Self {
	return identity.Self{Dev: s.Dev, Identity: identity.Identity{Name: name, Grade: identity.Service}}
}

// Authenticator is the server side of this choice.
func (s *Security) Authenticator() identity.Authenticator {
	return identity.Authenticator{Dev: s.Dev}
}
