package oauth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// claims are the parts of a token the gateway reads, from a JWT or an
// introspection answer.
type claims struct {
	Issuer   string
	Audience []string
	Scopes   []string
	Raw      map[string]any
}

// signingAlgs are the algorithms a JWT may be signed with: asymmetric ones
// only (a shared secret would let any holder mint tokens).
var signingAlgs = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA,
}

// algNames are signingAlgs as go-oidc takes them (without them it takes
// RS256 alone).
var algNames = func() []string {
	out := make([]string, len(signingAlgs))
	for i, a := range signingAlgs {
		out[i] = string(a)
	}
	return out
}()

// looksLikeJWT reports whether the token has a JWS's three parts.
func looksLikeJWT(token string) bool { return strings.Count(token, ".") == 2 }

// verifyJWT checks a JWT's signature against its issuer's keys and its
// issuer, expiry and not-before, and returns its claims.
func (s *Server) verifyJWT(ctx context.Context, raw string) (claims, error) {
	tok, err := jwt.ParseSigned(raw, signingAlgs)
	if err != nil {
		return claims{}, invalid("the access token is not a JWT signed with an asymmetric key: %v", err)
	}
	var unverified jwt.Claims
	if err := tok.UnsafeClaimsWithoutVerification(&unverified); err != nil {
		return claims{}, invalid("the access token's claims cannot be read: %v", err)
	}
	is, ok := s.issuers[unverified.Issuer]
	if !ok {
		return claims{}, invalid("tokens issued by %q are not accepted here; this endpoint accepts tokens from %s", unverified.Issuer, strings.Join(s.cfg.Issuers, ", "))
	}
	v, err := is.get(ctx)
	if err != nil {
		return claims{}, fmt.Errorf("%w: %v", errUnreachable, err)
	}
	idt, err := v.Verify(ctx, raw)
	if err != nil {
		return claims{}, verifyRefusal(unverified, tok, err)
	}
	var all map[string]any
	if err := idt.Claims(&all); err != nil {
		return claims{}, invalid("the access token's claims cannot be read: %v", err)
	}
	return claims{Issuer: idt.Issuer, Audience: idt.Audience, Scopes: scopes(all), Raw: all}, nil
}

// verifyRefusal says why go-oidc refused a token, in our words.
func verifyRefusal(c jwt.Claims, tok *jwt.JSONWebToken, err error) error {
	var expired *oidc.TokenExpiredError
	switch {
	case errors.As(err, &expired):
		return invalid("the access token expired at %s; get a new one from %s", expired.Expiry.UTC().Format(time.RFC3339), c.Issuer)
	case strings.Contains(err.Error(), "nbf"):
		return invalid("the access token is not valid before %s", c.NotBefore.Time().UTC().Format(time.RFC3339))
	case strings.Contains(err.Error(), "signature"):
		kid := ""
		if len(tok.Headers) > 0 {
			kid = tok.Headers[0].KeyID
		}
		return invalid("the access token's signature matches none of the keys %s publishes now (its key id is %q): it was signed by a retired key or by someone else; get a new token", c.Issuer, kid)
	}
	return invalid("the access token was refused: %v", err)
}

// scopes reads the `scope` claim (RFC 9068: space-separated) or the `scp`
// claim (a list, as some providers write it).
func scopes(all map[string]any) []string {
	if s, ok := all["scope"].(string); ok {
		return strings.Fields(s)
	}
	return strings_(all["scp"])
}

// strings_ reads a claim that holds a list of strings, or one string.
func strings_(v any) []string {
	switch v := v.(type) {
	case string:
		return strings.Fields(v)
	case []any:
		out := make([]string, 0, len(v))
		for _, item := range v {
			if s, ok := item.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
