package identity

import (
	"context"
	"crypto/x509"
	"fmt"
	"slices"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// Metadata keys (HTTP headers Switchboard-Identity and Switchboard-Grade). In
// dev mode they ARE the identity; in production only a service peer may send
// them, to act on behalf of the identity they name.
const (
	MetadataName  = "switchboard-identity"
	MetadataGrade = "switchboard-grade"
)

// Authenticator derives a caller's identity from one request.
type Authenticator struct {
	// Dev takes the identity from metadata instead of a client certificate.
	// Dev-mode servers listen on loopback only (see package listen).
	Dev bool
}

// Authenticate returns the identity of the caller of the request in ctx.
// Errors are gRPC statuses: UNAUTHENTICATED when there is no identity,
// PERMISSION_DENIED when a non-service peer asserts one.
func (a Authenticator) Authenticate(ctx context.Context) (Identity, error) {
	asserted, err := assertedIdentity(ctx)
	if err != nil {
		return Identity{}, err
	}
	if a.Dev {
		if asserted == nil {
			return Identity{}, status.Error(codes.Unauthenticated,
				`no identity: in dev mode every call names its caller in the "switchboard-identity" metadata key (HTTP header Switchboard-Identity)`)
		}
		return *asserted, nil
	}
	self, err := peerIdentity(ctx)
	if err != nil {
		return Identity{}, err
	}
	if asserted == nil {
		return self, nil
	}
	if self.Grade != Service {
		return Identity{}, status.Errorf(codes.PermissionDenied,
			"%q is a %s and may not act on behalf of %q: only a service certificate (OU=service) may",
			self.Name, self.Grade, asserted.Name)
	}
	return *asserted, nil
}

// assertedIdentity reads the identity metadata, if any.
func assertedIdentity(ctx context.Context) (*Identity, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	id, err := FromValues(md.Get(MetadataName), md.Get(MetadataGrade), MetadataName, MetadataGrade)
	if err != nil {
		return nil, status.Error(codes.Unauthenticated, err.Error())
	}
	return id, nil
}

// FromValues reads an asserted identity from the values of its name and
// grade keys (gRPC metadata, HTTP headers; nameKey and gradeKey name them
// in errors). No name is no assertion (nil); a grade without a name, a key
// given twice, a bad name or an unknown grade is an error naming its key.
// The grade defaults to Operator.
func FromValues(names, grades []string, nameKey, gradeKey string) (*Identity, error) {
	switch {
	case len(names) == 0 && len(grades) > 0:
		return nil, fmt.Errorf("%s is set but %s is not: a grade needs a name", quoteKey(gradeKey), quoteKey(nameKey))
	case len(names) == 0:
		return nil, nil
	case len(names) > 1 || len(grades) > 1:
		return nil, fmt.Errorf("%s or %s is set more than once", quoteKey(nameKey), quoteKey(gradeKey))
	}
	if err := CheckName(names[0]); err != nil {
		return nil, fmt.Errorf("%s: %w", nameKey, err)
	}
	grade := Operator
	if len(grades) == 1 {
		g, err := ParseGrade(grades[0])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", gradeKey, err)
		}
		grade = g
	}
	return &Identity{Name: names[0], Grade: grade}, nil
}

// quoteKey spells a metadata key as the errors always have ("switchboard-identity")
// and an HTTP header as itself (Switchboard-Identity).
func quoteKey(k string) string {
	if k == MetadataName || k == MetadataGrade {
		return fmt.Sprintf("%q", k)
	}
	return k
}

// peerIdentity reads the verified client certificate of the connection.
func peerIdentity(ctx context.Context) (Identity, error) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return Identity{}, status.Error(codes.Unauthenticated, "no peer: this server requires mutual TLS")
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok {
		return Identity{}, status.Error(codes.Unauthenticated, "the connection is not TLS: this server requires mutual TLS")
	}
	chains := info.State.VerifiedChains
	if len(chains) == 0 || len(chains[0]) == 0 {
		return Identity{}, status.Error(codes.Unauthenticated,
			"no client certificate: this server requires mutual TLS with a certificate signed by the suite's CA")
	}
	return FromCertificate(chains[0][0])
}

// FromCertificate maps a verified leaf to an identity: the subject CN is the
// name, and the OU gives the grade (`host`, `service`, anything else
// operator).
func FromCertificate(cert *x509.Certificate) (Identity, error) {
	name := cert.Subject.CommonName
	if err := CheckName(name); err != nil {
		return Identity{}, status.Error(codes.Unauthenticated, "client certificate: "+err.Error())
	}
	grade := Operator
	ous := cert.Subject.OrganizationalUnit
	switch {
	case slices.Contains(ous, string(Service)):
		grade = Service
	case slices.Contains(ous, string(Host)):
		grade = Host
	}
	return Identity{Name: name, Grade: grade}, nil
}

// As returns a context whose outgoing calls assert id. A service uses it to
// act on behalf of a caller (production) or to name itself (dev mode).
func As(ctx context.Context, id Identity) context.Context {
	md, _ := metadata.FromOutgoingContext(ctx)
	md = md.Copy()
	md.Set(MetadataName, id.Name)
	md.Set(MetadataGrade, string(id.Grade))
	return metadata.NewOutgoingContext(ctx, md)
}

// Self is how a service calls its peers as itself (its own identity, as
// opposed to a caller it acts for).
type Self struct {
	// Dev is the peers' mode: in dev mode the service names itself in
	// metadata; in production its certificate speaks for it.
	Dev bool
	// Identity is the service's own identity.
	Identity Identity
}

// AsSelf returns a context for a call the service makes as itself.
func (s Self) AsSelf(ctx context.Context) context.Context {
	if !s.Dev {
		return ctx
	}
	return As(ctx, s.Identity)
}

// String names the service for logs.
func (s Self) String() string { return fmt.Sprintf("%s (dev=%v)", s.Identity, s.Dev) }
