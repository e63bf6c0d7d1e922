package oauth

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// maxIntrospectionBytes bounds an introspection answer.
const maxIntrospectionBytes = 64 << 10

// introspectTimeout bounds one introspection call.
const introspectTimeout = 10 * time.Second

// introspection is the part of an RFC 7662 answer the gateway reads.
type introspection struct {
	Active bool   `json:"active"`
	Issuer string `json:"iss"`
	Exp    int64  `json:"exp"`
	Nbf    int64  `json:"nbf"`
}

// introspect asks the configured endpoint about an opaque token. The
// endpoint is trusted as the issuer's own: an answer naming an issuer must
// name a configured one, and an answer naming none speaks for the first.
func (s *Server) introspect(ctx context.Context, token string) (claims, error) {
	in := s.cfg.Introspection
	ctx, cancel := context.WithTimeout(ctx, introspectTimeout)
	defer cancel()
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.URL, strings.NewReader(form.Encode()))
	if err != nil {
		return claims{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(url.QueryEscape(in.ClientID), url.QueryEscape(in.ClientSecret))
	resp, err := s.client.Do(req)
	if err != nil {
		return claims{}, fmt.Errorf("%w: the introspection endpoint %s cannot be reached: %v", errUnreachable, in.URL, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxIntrospectionBytes+1))
	switch {
	case err != nil:
		return claims{}, fmt.Errorf("%w: reading the introspection answer of %s: %v", errUnreachable, in.URL, err)
	case len(body) > maxIntrospectionBytes:
		return claims{}, fmt.Errorf("%w: the introspection endpoint %s answered more than %d KiB", errUnreachable, in.URL, maxIntrospectionBytes>>10)
	case resp.StatusCode != http.StatusOK:
		return claims{}, fmt.Errorf("%w: the introspection endpoint %s answered %s", errUnreachable, in.URL, resp.Status)
	}
	var raw map[string]any
	var got introspection
	if err := json.Unmarshal(body, &got); err != nil {
		return claims{}, fmt.Errorf("%w: the introspection endpoint %s answered no RFC 7662 JSON: %v", errUnreachable, in.URL, err)
	}
	_ = json.Unmarshal(body, &raw) // the same bytes decoded once already
	if !got.Active {
		return claims{}, invalid("the access token is not active: its issuer says it is unknown, expired or revoked")
	}
	iss := got.Issuer
	if iss == "" {
		iss = s.cfg.Issuers[0]
	}
	if _, ok := s.issuers[iss]; !ok {
		return claims{}, invalid("tokens issued by %q are not accepted here; this endpoint accepts tokens from %s", iss, strings.Join(s.cfg.Issuers, ", "))
	}
	now := s.now()
	if got.Exp != 0 && !now.Before(time.Unix(got.Exp, 0)) {
		return claims{}, invalid("the access token expired at %s; get a new one from %s", time.Unix(got.Exp, 0).UTC().Format(time.RFC3339), iss)
	}
	if got.Nbf != 0 && now.Before(time.Unix(got.Nbf, 0)) {
		return claims{}, invalid("the access token is not valid before %s", time.Unix(got.Nbf, 0).UTC().Format(time.RFC3339))
	}
	return claims{Issuer: iss, Audience: strings_(raw["aud"]), Scopes: scopes(raw), Raw: raw}, nil
}
