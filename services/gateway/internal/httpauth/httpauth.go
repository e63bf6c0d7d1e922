// Package httpauth says who an HTTP caller is (docs/design.md §4): a bearer token
// checked with the registry, the verified client certificate in production,
// or the Switchboard-Identity header in dev mode. The identity it finds is
// what the gateway forwards to the backends; the credentials themselves
// (the token, the headers) go no further than this package.
package httpauth

import (
	"context"
	"net/http"
	"strings"

	"github.com/switchboard-run/switchboard/kit/identity"
	"github.com/switchboard-run/switchboard/services/gateway/internal/httperr"
)

// HTTP headers that carry credentials. The identity headers are the HTTP
// spelling of the kit's metadata keys.
const (
	HeaderAuthorization = "Authorization"
	HeaderIdentity      = "Switchboard-Identity"
	HeaderGrade         = "Switchboard-Grade"
)

// Tokens maps a bearer token to the identity it acts as.
type Tokens interface {
	// Authenticate returns the token's identity, or a refusal (a gRPC status
	// whose sentence reaches the caller unchanged).
	Authenticate(ctx context.Context, secret string) (identity.Identity, error)
}

// Resolver finds the identity of each HTTP request.
type Resolver struct {
	// Dev takes the identity from the Switchboard-Identity header (the
	// gateway then listens on loopback only); otherwise from the verified
	// client certificate.
	Dev bool
	// Tokens checks bearer tokens, in either mode.
	Tokens Tokens
}

// Resolve returns the caller's identity, or a refusal naming how to
// identify.
func (res Resolver) Resolve(r *http.Request) (identity.Identity, error) {
	asserted := len(r.Header.Values(HeaderIdentity)) > 0 || len(r.Header.Values(HeaderGrade)) > 0
	auths := r.Header.Values(HeaderAuthorization)
	switch {
	case asserted && !res.Dev:
		return identity.Identity{}, httperr.New(http.StatusUnauthorized,
			"the %s and %s headers name a caller only in dev mode; this gateway takes a client certificate signed by the suite's CA, or Authorization: Bearer <token>",
			HeaderIdentity, HeaderGrade)
	case asserted && len(auths) > 0:
		return identity.Identity{}, httperr.New(http.StatusUnauthorized,
			"send either Authorization: Bearer <token> or the %s header, not both", HeaderIdentity)
	case len(auths) > 0:
		return res.bearer(r.Context(), auths)
	case asserted:
		return headerIdentity(r.Header)
	case res.Dev:
		return identity.Identity{}, httperr.New(http.StatusUnauthorized,
			"no identity: in dev mode name the caller in the %s header (and optionally %s), or send Authorization: Bearer <token>",
			HeaderIdentity, HeaderGrade)
	case r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.VerifiedChains[0]) > 0:
		// A bearer token, when sent, wins over the connection's certificate:
		// it is the more specific credential, chosen for this request.
		return identity.FromCertificate(r.TLS.VerifiedChains[0][0])
	}
	return identity.Identity{}, httperr.New(http.StatusUnauthorized,
		"no identity: present a client certificate signed by the suite's CA, or send Authorization: Bearer <token>")
}

// bearer checks the one Authorization header.
func (res Resolver) bearer(ctx context.Context, values []string) (identity.Identity, error) {
	if len(values) > 1 {
		return identity.Identity{}, httperr.New(http.StatusUnauthorized,
			"send one Authorization header, not %d", len(values))
	}
	scheme, token, _ := strings.Cut(values[0], " ")
	token = strings.TrimSpace(token)
	if !strings.EqualFold(scheme, "Bearer") || token == "" {
		return identity.Identity{}, httperr.New(http.StatusUnauthorized,
			`the Authorization header must be "Bearer <token>"`)
	}
	if res.Tokens == nil {
		return identity.Identity{}, httperr.New(http.StatusUnauthorized, "this gateway checks no bearer tokens")
	}
	return res.Tokens.Authenticate(ctx, token)
}

// headerIdentity reads the dev-mode headers. Dev mode trusts whoever
// reaches loopback: without a grade the caller is an admin, and it sees
// every workspace.
func headerIdentity(h http.Header) (identity.Identity, error) {
	id, err := identity.FromValues(h.Values(HeaderIdentity), h.Values(HeaderGrade), HeaderIdentity, HeaderGrade)
	switch {
	case err != nil:
		return identity.Identity{}, httperr.New(http.StatusUnauthorized, "%v", err)
	case id == nil: // the caller checks for the header before calling
		return identity.Identity{}, httperr.New(http.StatusUnauthorized,
			"%s is set but %s is not: a grade needs a name", HeaderGrade, HeaderIdentity)
	}
	all := identity.AllWorkspaces()
	id.Workspaces = &all
	return *id, nil
}

// Middleware admits requests with an identity, putting it in the request
// context (identity.FromContext), and refuses the rest with the envelope.
// It strips the credential headers: nothing downstream may forward them.
func (res Resolver) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := res.Resolve(r)
		if err != nil {
			httperr.WriteErr(w, err)
			return
		}
		r = r.WithContext(identity.NewContext(r.Context(), id))
		r.Header = r.Header.Clone()
		for _, h := range []string{HeaderAuthorization, HeaderIdentity, HeaderGrade} {
			r.Header.Del(h)
		}
		next.ServeHTTP(w, r)
	})
}
