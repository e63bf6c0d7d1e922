package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
)

// issuer is one configured authorization server: its discovery document and
// signing keys, fetched on the first token it issued and again once they are
// KeyMaxAge old. Between fetches go-oidc's key set itself fetches the keys
// again when a token names a key it does not hold (a rotation).
type issuer struct {
	url    string
	client *http.Client
	maxAge time.Duration
	now    func() time.Time

	mu       sync.Mutex
	verifier *oidc.IDTokenVerifier
	fetched  time.Time
}

// discoveryTimeout bounds fetching the discovery document.
const discoveryTimeout = 10 * time.Second

// get returns the issuer's verifier, discovering it when it has none or an
// old one. A failed discovery is not kept: the next token tries again.
func (is *issuer) get(ctx context.Context) (*oidc.IDTokenVerifier, error) {
	is.mu.Lock()
	defer is.mu.Unlock()
	if is.verifier != nil && is.now().Sub(is.fetched) < is.maxAge {
		return is.verifier, nil
	}
	// The key set keeps the context it was made with for its later
	// fetches: it carries the HTTP client, never the request's deadline.
	keyCtx := oidc.ClientContext(context.WithoutCancel(ctx), is.client)
	dctx, cancel := context.WithTimeout(keyCtx, discoveryTimeout)
	defer cancel()
	p, err := oidc.NewProvider(dctx, is.url)
	if err != nil {
		if is.verifier != nil {
			// A provider briefly away keeps its last keys.
			return is.verifier, nil
		}
		return nil, fmt.Errorf("the issuer %q cannot be reached to check its token: %v", is.url, err)
	}
	var doc struct {
		JWKS string `json:"jwks_uri"`
	}
	if err := p.Claims(&doc); err != nil || doc.JWKS == "" {
		return nil, fmt.Errorf("the issuer %q publishes no jwks_uri in its discovery document", is.url)
	}
	keys := oidc.NewRemoteKeySet(keyCtx, doc.JWKS)
	// The audience is this resource, checked by the caller (several
	// spellings are accepted); go-oidc checks the issuer, exp, nbf and the
	// signature.
	is.verifier = oidc.NewVerifier(is.url, keys, &oidc.Config{SkipClientIDCheck: true, Now: is.now, SupportedSigningAlgs: algNames})
	is.fetched = is.now()
	return is.verifier, nil
}

// errUnreachable marks an issuer the gateway cannot reach: a 503, not the
// caller's fault.
var errUnreachable = errors.New("unreachable")
