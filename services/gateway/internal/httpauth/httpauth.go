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
	"sync"
	"time"

	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/services/gateway/internal/httperr"
)

// HTTP headers that carry credentials. The identity headers are the HTTP
// spelling of the kit's metadata keys.
const (
	HeaderAuthorization = "Authorization"
	HeaderIdentity      = "Switchboard-Identity"
	HeaderGrade         = "Switchboard-Grade"
	HeaderDevSecret     = "Switchboard-Dev-Secret"
)

// Tokens maps a bearer token to the identity it acts as.
type Tokens interface {
	// Authenticate returns the token's identity, or a refusal (a gRPC status
	// whose sentence reaches the caller unchanged).
	Authenticate(ctx context.Context, secret string) (identity.Identity, error)
}

// OAuth checks the access tokens of an OAuth authorization server
// (package oauth) on the routes that take them.
type OAuth interface {
	// Takes reports whether the bearer token is one for OAuth to check
	// rather than Tokens (a Switchboard token keeps working beside it).
	Takes(token string) bool
	// Authenticate checks the token for the resource r addresses and
	// returns its identity and the groups it carries.
	Authenticate(r *http.Request, token string) (identity.Identity, []string, error)
	// Challenge is the WWW-Authenticate value of a 401 or 403 for r.
	Challenge(r *http.Request, err error) string
}

// Resolver finds the identity of each HTTP request.
type Resolver struct {
	// OAuth, when set, checks OAuth access tokens, and its challenge
	// answers every refusal of an unidentified caller.
	OAuth OAuth
	// Recheck, when set, checks a bearer token again this often for as
	// long as its request lasts, and ends the request when the token is
	// refused (revoked, expired): a stream held open with a token (a watch,
	// the console's live views, an MCP event stream) must not outlive it.
	Recheck time.Duration
	// Dev takes the identity from the Switchboard-Identity header (the
	// gateway then listens on loopback only); otherwise from the verified
	// client certificate.
	Dev bool
	// DevSecret, when set, is the per-run secret a dev-mode caller must
	// send (Switchboard-Dev-Secret) before its header's word is taken; a
	// bearer token needs none.
	DevSecret string
	// Tokens checks bearer tokens, in either mode.
	Tokens Tokens
}

// Resolve returns the caller's identity, or a refusal naming how to
// identify.
func (res Resolver) Resolve(r *http.Request) (identity.Identity, error) {
	id, _, err := res.resolve(r)
	return id, err
}

// resolve is Resolve, with the groups an OAuth token carries.
func (res Resolver) resolve(r *http.Request) (identity.Identity, []string, error) {
	asserted := len(r.Header.Values(HeaderIdentity)) > 0 || len(r.Header.Values(HeaderGrade)) > 0
	auths := r.Header.Values(HeaderAuthorization)
	switch {
	case asserted && !res.Dev:
		return identity.Identity{}, nil, httperr.New(http.StatusUnauthorized,
			"the %s and %s headers name a caller only in dev mode; this gateway takes a client certificate signed by the suite's CA, or Authorization: Bearer <token>",
			HeaderIdentity, HeaderGrade)
	case asserted && len(auths) > 0:
		return identity.Identity{}, nil, httperr.New(http.StatusUnauthorized,
			"send either Authorization: Bearer <token> or the %s header, not both", HeaderIdentity)
	case len(auths) > 0:
		return res.bearer(r, auths)
	case asserted && res.DevSecret != "":
		if err := identity.CheckDevSecret(r.Header.Values(HeaderDevSecret), res.DevSecret, "the "+HeaderDevSecret+" header"); err != nil {
			return identity.Identity{}, nil, httperr.New(http.StatusUnauthorized, "%v", err)
		}
		fallthrough
	case asserted:
		id, err := headerIdentity(r.Header)
		return id, nil, err
	case res.Dev:
		return identity.Identity{}, nil, httperr.New(http.StatusUnauthorized,
			"no identity: in dev mode name the caller in the %s header (and optionally %s), or send Authorization: Bearer <token>",
			HeaderIdentity, HeaderGrade)
	case r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.VerifiedChains[0]) > 0:
		// A bearer token, when sent, wins over the connection's certificate:
		// it is the more specific credential, chosen for this request.
		id, err := identity.FromCertificate(r.TLS.VerifiedChains[0][0])
		return id, nil, err
	}
	return identity.Identity{}, nil, httperr.New(http.StatusUnauthorized,
		"no identity: present a client certificate signed by the suite's CA, or send Authorization: Bearer <token>")
}

// bearer checks the one Authorization header.
func (res Resolver) bearer(r *http.Request, values []string) (identity.Identity, []string, error) {
	if len(values) > 1 {
		return identity.Identity{}, nil, httperr.New(http.StatusUnauthorized,
			"send one Authorization header, not %d", len(values))
	}
	scheme, token, _ := strings.Cut(values[0], " ")
	token = strings.TrimSpace(token)
	if !strings.EqualFold(scheme, "Bearer") || token == "" {
		return identity.Identity{}, nil, httperr.New(http.StatusUnauthorized,
			`the Authorization header must be "Bearer <token>"`)
	}
	if res.OAuth != nil && res.OAuth.Takes(token) {
		return res.OAuth.Authenticate(r, token)
	}
	if res.Tokens == nil {
		return identity.Identity{}, nil, httperr.New(http.StatusUnauthorized, "this gateway checks no bearer tokens")
	}
	id, err := res.Tokens.Authenticate(r.Context(), token)
	return id, nil, err
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
		id, groups, err := res.resolve(r)
		if err != nil {
			if status, _ := httperr.From(err); res.OAuth != nil && (status == http.StatusUnauthorized || status == http.StatusForbidden) {
				w.Header().Set("WWW-Authenticate", res.OAuth.Challenge(r, err))
			}
			httperr.WriteErr(w, err)
			return
		}
		if groups != nil {
			// An OAuth token's groups claim limits the caller to those tool
			// groups, as a Switchboard token minted with groups does.
			id.Groups = groups
		}
		ctx := r.Context()
		if res.Recheck > 0 && len(r.Header.Values(HeaderAuthorization)) > 0 {
			var stop func()
			ctx, stop = res.recheck(ctx, r.Clone(ctx))
			defer stop()
		}
		r = r.WithContext(identity.NewContext(ctx, id))
		r.Header = r.Header.Clone()
		for _, h := range []string{HeaderAuthorization, HeaderIdentity, HeaderGrade, HeaderDevSecret} {
			r.Header.Del(h)
		}
		next.ServeHTTP(w, r)
	})
}

// recheck returns ctx, cancelled with the refusal once orig's bearer token
// is refused on a later check; stop ends the checks. A timer, not a
// goroutine, waits between checks, so a short request costs one timer.
// Only a refusal of the credential ends the request: a registry that cannot
// answer for a while does not cut every stream.
func (res Resolver) recheck(ctx context.Context, orig *http.Request) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	var (
		mu    sync.Mutex
		timer *time.Timer
		done  bool
	)
	var check func()
	check = func() {
		_, _, err := res.resolve(orig)
		mu.Lock()
		defer mu.Unlock()
		if done {
			return
		}
		if refused(err) {
			cancel(err)
			return
		}
		timer = time.AfterFunc(res.Recheck, check)
	}
	mu.Lock()
	timer = time.AfterFunc(res.Recheck, check)
	mu.Unlock()
	return ctx, func() {
		mu.Lock()
		done = true
		timer.Stop()
		mu.Unlock()
		cancel(nil)
	}
}

// refused reports whether err refuses the credential itself (401 or 403,
// UNAUTHENTICATED or PERMISSION_DENIED), as opposed to a fault in reaching
// whoever checks it.
func refused(err error) bool {
	if err == nil {
		return false
	}
	st, _ := httperr.From(err)
	return st == http.StatusUnauthorized || st == http.StatusForbidden
}
