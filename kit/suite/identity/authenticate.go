package identity

import (
	"context"
	"crypto/x509"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// Metadata keys (HTTP headers Switchboard-Identity and Switchboard-Grade).
// In dev mode they ARE the identity; in production only a service peer may
// send them, to act on behalf of the identity they name, within its scope
// (MayAssert). MetadataWorkspaces states that identity's workspaces as
// ParseWorkspaceList reads them (the gateway sends a token's).
const (
	MetadataName       = "switchboard-identity"
	MetadataGrade      = "switchboard-grade"
	MetadataWorkspaces = "switchboard-workspaces"
)

// Authenticator derives a caller's identity from one request.
type Authenticator struct {
	// Dev takes the identity from metadata instead of a client certificate.
	// Dev-mode servers listen on loopback only (see package listen).
	Dev bool
	// DevSecret, when set, is the per-run secret a dev-mode call must carry
	// (MetadataDevSecret) before its word is taken.
	DevSecret string
}

// Authenticate returns the identity of the caller of the request in ctx.
// Errors are gRPC statuses: UNAUTHENTICATED when there is no identity,
// PERMISSION_DENIED when a peer asserts one it may not.
func (a Authenticator) Authenticate(ctx context.Context) (Identity, error) {
	// Only the three keys, not the whole metadata: FromIncomingContext
	// copies every key of every call (docs/bench.md).
	grade := metadata.ValueFromIncomingContext(ctx, MetadataGrade)
	asserted, err := FromValues(metadata.ValueFromIncomingContext(ctx, MetadataName), grade, MetadataName, MetadataGrade)
	if err != nil {
		return Identity{}, status.Error(codes.Unauthenticated, err.Error())
	}
	stated, err := statedWorkspaces(metadata.ValueFromIncomingContext(ctx, MetadataWorkspaces), asserted)
	if err != nil {
		return Identity{}, status.Error(codes.Unauthenticated, err.Error())
	}
	if a.Dev {
		if a.DevSecret != "" {
			if err := CheckDevSecret(metadata.ValueFromIncomingContext(ctx, MetadataDevSecret), a.DevSecret, fmt.Sprintf("the %q metadata key (HTTP header Switchboard-Dev-Secret)", MetadataDevSecret)); err != nil {
				return Identity{}, status.Error(codes.Unauthenticated, err.Error())
			}
		}
		if asserted == nil {
			return Identity{}, status.Error(codes.Unauthenticated,
				`no identity: in dev mode every call names its caller in the "switchboard-identity" metadata key (HTTP header Switchboard-Identity)`)
		}
		// Dev mode trusts whoever reaches loopback: they see every
		// workspace unless a peer (the gateway, for a token) says less.
		all := AllWorkspaces()
		asserted.Workspaces = &all
		if stated != nil {
			asserted.Workspaces = stated
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
			"%q is %s and may not act on behalf of %q: only a service certificate (OU=service) may",
			self.Name, self.Grade.Article(), asserted.Name)
	}
	if len(grade) == 0 {
		return Identity{}, status.Errorf(codes.PermissionDenied,
			"%q asserted %q without a grade: an assertion names the grade it acts as", self.Name, asserted.Name)
	}
	asserted.Workspaces = stated
	if err := MayAssert(self.Name, *asserted); err != nil {
		return Identity{}, status.Error(codes.PermissionDenied, err.Error())
	}
	return *asserted, nil
}

// statedWorkspaces reads the workspaces metadata's values vs: nil when
// absent. It states the asserted identity's workspaces, so it needs one.
func statedWorkspaces(vs []string, asserted *Identity) (*Workspaces, error) {
	switch {
	case len(vs) == 0:
		return nil, nil
	case asserted == nil:
		return nil, fmt.Errorf("%q is set but %q is not: workspaces belong to a named identity", MetadataWorkspaces, MetadataName)
	case len(vs) > 1:
		return nil, fmt.Errorf("%q is set more than once", MetadataWorkspaces)
	}
	w, err := ParseWorkspaceList(vs[0])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", MetadataWorkspaces, err)
	}
	return &w, nil
}

// FromValues reads an asserted identity from the values of its name and
// grade keys (gRPC metadata, HTTP headers; nameKey and gradeKey name them
// in errors). No name is no assertion (nil); a grade without a name, a key
// given twice, a bad name or an unknown grade is an error naming its key.
// Without a grade the identity is an admin: that is dev mode's reading,
// where whoever reaches loopback may name any grade anyway (production
// refuses an assertion without a grade).
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
	grade := Admin
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
// name, the OU the grade. A leaf whose OUs name no grade, or more than one,
// is refused (UNAUTHENTICATED): there is no default grade.
func FromCertificate(cert *x509.Certificate) (Identity, error) {
	name := cert.Subject.CommonName
	if err := CheckName(name); err != nil {
		return Identity{}, status.Error(codes.Unauthenticated, "client certificate: "+err.Error())
	}
	ous := cert.Subject.OrganizationalUnit
	var grades []Grade
	for _, ou := range ous {
		if g, err := ParseGrade(ou); err == nil && !slices.Contains(grades, g) {
			grades = append(grades, g)
		}
	}
	switch {
	case len(grades) == 1:
		return Identity{Name: name, Grade: grades[0]}, nil
	case len(grades) > 1:
		return Identity{}, status.Errorf(codes.Unauthenticated,
			"the client certificate of %q names %d grades in its OU (%s); it must name exactly one", name, len(grades), strings.Join(ous, ", "))
	case slices.Contains(ous, "operator"):
		return Identity{}, status.Errorf(codes.Unauthenticated,
			`the client certificate of %q has OU "operator", a grade that is gone: mint it again with --grade driver or --grade admin`, name)
	}
	return Identity{}, status.Errorf(codes.Unauthenticated,
		"the client certificate of %q names no grade: its OU must be one of host, driver, admin, service or scrape, and it has %s", name, ouList(ous))
}

func ouList(ous []string) string {
	if len(ous) == 0 {
		return "none"
	}
	q := make([]string, len(ous))
	for i, ou := range ous {
		q[i] = fmt.Sprintf("%q", ou)
	}
	return strings.Join(q, ", ")
}

// As returns a context whose outgoing calls assert id (and its stated
// workspaces, when it has any). A service uses it to act on behalf of a
// caller (production) or to name itself (dev mode).
func As(ctx context.Context, id Identity) context.Context {
	md, _ := metadata.FromOutgoingContext(ctx)
	md = md.Copy()
	md.Set(MetadataName, id.Name)
	md.Set(MetadataGrade, string(id.Grade))
	if id.Workspaces != nil {
		md.Set(MetadataWorkspaces, id.Workspaces.String())
	} else {
		md.Delete(MetadataWorkspaces)
	}
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
