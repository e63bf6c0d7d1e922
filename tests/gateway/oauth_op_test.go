package gateway_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// provider is zitadel's example OpenID provider (example/server/exampleop)
// on a loopback port, with its service client sid1 (client credentials).
// Its storage is the example's, with what a real provider is configured
// with and the example hard-codes: a signing key that can be rotated, JWT
// access tokens for the service client, the audience (the API) its tokens
// are for, and the granted scopes written into the token (RFC 9068's
// scope claim). The OP itself (discovery, JWKS, the token endpoint,
// signing) is the library's.
type provider struct {
	Issuer string
	store  *opStore
}

// Service client of the example storage.
const (
	serviceClient = "sid1"
	serviceSecret = "verysecret"
)

// newProvider serves an example OP until the test ends; its tokens are
// for audience.
func newProvider(t testing.TB, audience string) *provider {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	issuer := "http://" + lis.Addr().String()
	st := &opStore{Storage: storage.NewStorage(storage.NewUserStore(issuer)), audience: []string{audience}}
	st.rotate(t)
	srv := &http.Server{Handler: exampleop.SetupServer(issuer, st, nil, false), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(func() { _ = srv.Close() })
	return &provider{Issuer: issuer, store: st}
}

// token gets an access token with scopes from the token endpoint, as the
// service client (the client credentials grant, RFC 6749 §4.4). The
// request is made by hand rather than with x/oauth2, which refuses the
// answer for an already expired token (its expires_in overflows).
func (p *provider) token(t testing.TB, tokenURL string, scopes ...string) string {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "scope": {strings.Join(scopes, " ")}}
	req, err := http.NewRequest(http.MethodPost, tokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(serviceClient, serviceSecret)
	res, err := testkit.HTTP.Do(req)
	if err != nil {
		t.Fatalf("the provider's token endpoint: %v", err)
	}
	defer res.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK || json.Unmarshal(body, &tok) != nil || tok.AccessToken == "" {
		t.Fatalf("the provider's token endpoint answered %s: %s", res.Status, body)
	}
	return tok.AccessToken
}

// opStore is the example storage with a rotating key, JWT access tokens
// for the service client, a configured audience, and a lifetime override.
type opStore struct {
	*storage.Storage
	mu       sync.Mutex
	key      *opKey
	audience []string
	lifetime time.Duration // 0: the example's
	// opaque makes the service client's tokens opaque (the example's
	// default), for introspection; issued keeps what introspection tells.
	opaque bool
	issued map[string]issuedToken
}

// issuedToken is what the provider knows of a token it issued.
type issuedToken struct {
	subject  string
	audience []string
	scopes   []string
	exp      time.Time
}

// The resource server's own client at the provider, for introspection.
const (
	introspector       = "gateway"
	introspectorSecret = "gateway-secret"
)

type opKey struct {
	id  string
	key *rsa.PrivateKey
}

func (k *opKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k *opKey) Algorithm() jose.SignatureAlgorithm          { return jose.RS256 }
func (k *opKey) Key() any                                    { return k.key }
func (k *opKey) ID() string                                  { return k.id }
func (k *opKey) Use() string                                 { return "sig" }

// public is the key as the JWKS publishes it.
type public struct{ *opKey }

func (p public) Key() any { return &p.key.PublicKey }

// rotate replaces the signing key; the old one is no longer published.
func (s *opStore) rotate(t testing.TB) {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	id := make([]byte, 8)
	_, _ = rand.Read(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.key = &opKey{id: hex.EncodeToString(id), key: k}
}

func (s *opStore) set(audience []string, lifetime time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.audience, s.lifetime = audience, lifetime
}

func (s *opStore) SigningKey(context.Context) (op.SigningKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.key, nil
}

func (s *opStore) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}

func (s *opStore) KeySet(context.Context) ([]op.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return []op.Key{public{s.key}}, nil
}

// jwtClient is the example's service client, issuing JWT access tokens.
type jwtClient struct{ op.Client }

func (jwtClient) AccessTokenType() op.AccessTokenType { return op.AccessTokenTypeJWT }

func (s *opStore) ClientCredentials(ctx context.Context, id, secret string) (op.Client, error) {
	c, err := s.Storage.ClientCredentials(ctx, id, secret)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.opaque {
		return c, nil
	}
	return jwtClient{c}, nil
}

func (s *opStore) ClientCredentialsTokenRequest(ctx context.Context, id string, scopes []string) (op.TokenRequest, error) {
	req, err := s.Storage.ClientCredentialsTokenRequest(ctx, id, scopes)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	jr := req.(*oidc.JWTTokenRequest)
	jr.Audience = s.audience
	return jr, nil
}

func (s *opStore) CreateAccessToken(ctx context.Context, req op.TokenRequest) (string, time.Time, error) {
	id, exp, err := s.Storage.CreateAccessToken(ctx, req)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lifetime != 0 {
		exp = time.Now().Add(s.lifetime)
	}
	if s.issued == nil {
		s.issued = map[string]issuedToken{}
	}
	s.issued[id] = issuedToken{subject: req.GetSubject(), audience: req.GetAudience(), scopes: req.GetScopes(), exp: exp}
	return id, exp, err
}

// AuthorizeClientIDSecret admits the resource server's client too.
func (s *opStore) AuthorizeClientIDSecret(ctx context.Context, id, secret string) error {
	if id == introspector {
		if secret != introspectorSecret {
			return errors.New("wrong client secret")
		}
		return nil
	}
	return s.Storage.AuthorizeClientIDSecret(ctx, id, secret)
}

// SetIntrospectionFromToken answers for a token the provider issued: the
// example's own looks its subject up among the users, which a service
// client is not, and leaves out the audience the resource server checks.
func (s *opStore) SetIntrospectionFromToken(_ context.Context, resp *oidc.IntrospectionResponse, tokenID, subject, clientID string) error {
	s.mu.Lock()
	tok, ok := s.issued[tokenID]
	s.mu.Unlock()
	switch {
	case !ok || tok.subject != subject:
		return errors.New("token is invalid")
	case !slices.Contains(tok.audience, clientID):
		return errors.New("token is not valid for this client")
	case time.Now().After(tok.exp):
		return errors.New("token is expired")
	}
	resp.Subject, resp.Audience, resp.Scope, resp.Expiration = subject, tok.audience, tok.scopes, oidc.FromTime(tok.exp)
	return nil
}

// GetPrivateClaimsFromScopes writes the granted scopes into the token.
func (s *opStore) GetPrivateClaimsFromScopes(ctx context.Context, user, client string, scopes []string) (map[string]any, error) {
	claims, err := s.Storage.GetPrivateClaimsFromScopes(ctx, user, client, scopes)
	if claims == nil {
		claims = map[string]any{}
	}
	claims["scope"] = strings.Join(scopes, " ")
	return claims, err
}

// keyIDOf is the key id in a JWT's header.
func (s *opStore) keyIDOf(t testing.TB, tok string) string {
	t.Helper()
	jws, err := jose.ParseSigned(tok, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil || len(jws.Signatures) != 1 {
		t.Fatalf("the provider's token is no JWS: %v", err)
	}
	return jws.Signatures[0].Header.KeyID
}

// envelopeError is the sentence of an error envelope, or the body.
func envelopeError(body []byte) string {
	var env struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &env) == nil && env.Error != "" {
		return env.Error
	}
	return string(body)
}
