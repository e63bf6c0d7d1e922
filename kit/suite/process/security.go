package process

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"

	"google.golang.org/grpc/credentials"

	"github.com/switchboard-run/switchboard/kit/suite/certs"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
)

// Security is how a process proves who it is and checks who calls it: dev
// mode (loopback, identity from metadata) or mutual TLS. It is the one place
// a process's TLS material is loaded from (ServerTLS, ClientTLS).
type Security struct {
	Dev bool
	// DevSecretFile names a dev-mode suite's per-run secret
	// (--dev-secret-file): a dev-mode server then takes only calls that
	// carry it, and its calls carry it.
	DevSecretFile string
	// DevSecret is that secret, read by Check (`switchboard dev` draws
	// its own). Empty: a dev-mode server takes every loopback caller's
	// word, as a test's may.
	DevSecret string
	Files     certs.Files
	// ServerName overrides the name checked on peers' certificates.
	ServerName string
}

// Register adds --dev, --dev-secret-file, --tls-ca, --tls-cert, --tls-key
// and --tls-server-name.
func (s *Security) Register(fs *flag.FlagSet) {
	fs.BoolVar(&s.Dev, "dev", false, "dev mode: loopback only, identity from the switchboard-identity header; no TLS")
	fs.StringVar(&s.DevSecretFile, "dev-secret-file", "", "dev mode: the per-run secret every call must carry (switchboard dev writes <--data>/dev-secret); a client without it sends the one switchboard dev wrote, found by itself")
	fs.StringVar(&s.Files.CA, "tls-ca", "", "PEM file of the CA that signs every peer")
	fs.StringVar(&s.Files.Cert, "tls-cert", "", "PEM file of this process's certificate")
	fs.StringVar(&s.Files.Key, "tls-key", "", "PEM file of this process's key")
	fs.StringVar(&s.ServerName, "tls-server-name", "", "name to check on peers' certificates (default: the dialed host)")
}

// Check refuses a mixed or empty choice, naming what to pass, and reads
// the dev secret.
func (s *Security) Check() error {
	switch {
	case s.Dev && !s.Files.Empty():
		return errors.New("--dev and --tls-* are exclusive: dev mode has no TLS")
	case !s.Dev && s.Files.Empty():
		return certs.ErrNoTLS
	case !s.Dev && s.DevSecretFile != "":
		return errors.New("--dev-secret-file is dev mode's: with --tls-* the certificates speak")
	case s.DevSecretFile != "":
		secret, err := ReadDevSecret(s.DevSecretFile)
		if err != nil {
			return fmt.Errorf("--dev-secret-file: %w", err)
		}
		s.DevSecret = secret
	}
	return nil
}

// ClientDevCredentials carry a dev-mode process's secret on its calls: the
// file of --dev-secret-file, else its own secret, else the file
// `switchboard dev` wrote where a client finds it (FindDevSecret); nil
// outside dev mode or when there is none.
func (s *Security) ClientDevCredentials() (credentials.PerRPCCredentials, error) {
	switch {
	case !s.Dev:
		return nil, nil
	case s.DevSecretFile != "":
		return DevCredentials(s.DevSecretFile)
	case s.DevSecret != "":
		return identity.DevSecret(s.DevSecret), nil
	}
	if path := FindDevSecret(); path != "" {
		return DevCredentials(path)
	}
	return nil, nil
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
	return identity.Authenticator{Dev: s.Dev, DevSecret: s.DevSecret}
}

// ActingSelf is Self for a service that acts on behalf of others — the
// gateway for its callers, the bridge for its mounted clients — whose
// certificate (clientTLS's, nil in dev mode) must be a service's named
// name: the backends admit what it asserts only within the scope
// identity.ScopeOf(name) states. Any other certificate would have each
// call it makes for someone refused, one at a time, so it fails here.
func (s *Security) ActingSelf(name string, clientTLS *tls.Config) (identity.Self, error) {
	self := s.Self(name)
	if clientTLS == nil {
		return self, nil
	}
	if len(clientTLS.Certificates) == 0 || len(clientTLS.Certificates[0].Certificate) == 0 {
		return identity.Self{}, fmt.Errorf("the %s has no certificate of its own (--tls-cert)", name)
	}
	leaf := clientTLS.Certificates[0].Leaf
	if leaf == nil {
		var err error
		if leaf, err = x509.ParseCertificate(clientTLS.Certificates[0].Certificate[0]); err != nil {
			return identity.Self{}, fmt.Errorf("the %s's certificate %s: %w", name, s.Files.Cert, err)
		}
	}
	id, err := identity.FromCertificate(leaf)
	if err != nil {
		return identity.Self{}, fmt.Errorf("the %s's certificate %s: %w", name, s.Files.Cert, err)
	}
	if id.Grade != identity.Service || id.Name != name {
		return identity.Self{}, fmt.Errorf("the %s's certificate %s names %q with grade %s: the %s acts on behalf of others, which the suite admits only from a service certificate named %q (CN=%s, OU=service)",
			name, s.Files.Cert, id.Name, id.Grade, name, name, name)
	}
	self.Identity = id
	return self, nil
}
