package oauth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// issuerServer is an issuer the test controls: a discovery document and a
// JWKS on a loopback port, and a key to sign with (ES256, to see that more
// than go-oidc's default RS256 is taken). The example OP of the gateway's
// tests cannot mint a token valid only later; this one can.
type issuerServer struct {
	URL string
	key *ecdsa.PrivateKey
}

func newIssuer(t *testing.T) *issuerServer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	is := &issuerServer{key: key}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": is.URL, "jwks_uri": is.URL + "/keys",
			"authorization_endpoint": is.URL + "/auth", "token_endpoint": is.URL + "/token", "id_token_signing_alg_values_supported": []string{"ES256"}})
	})
	mux.HandleFunc("/keys", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "ES256", Use: "sig"}}})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	is.URL = srv.URL
	return is
}

func (is *issuerServer) sign(t *testing.T, c jwt.Claims, extra map[string]any) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: is.key}, (&jose.SignerOptions{}).WithHeader("kid", "k1").WithType("at+jwt"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(signer).Claims(c).Claims(extra).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestJWTTimesAndAlgorithms(t *testing.T) {
	is := newIssuer(t)
	s, err := New(Config{Issuers: []string{is.URL}, Resource: "http://127.0.0.1:8080"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:8080/mcp/dev", nil)
	r.SetPathValue("workspace", "dev")
	now := time.Now()
	claims := func(nbf time.Time) jwt.Claims {
		return jwt.Claims{Issuer: is.URL, Subject: "bot", Audience: jwt.Audience{"http://127.0.0.1:8080/mcp/dev"},
			Expiry: jwt.NewNumericDate(now.Add(time.Hour)), NotBefore: jwt.NewNumericDate(nbf)}
	}
	scopes := map[string]any{"scp": []string{"switchboard:driver", "switchboard:workspace:dev"}, "groups": []string{"ops"}}

	id, _, err := s.Authenticate(r, is.sign(t, claims(now.Add(-time.Minute)), scopes))
	if err != nil || id.Name != "bot" || id.Grade != "driver" || !id.Workspaces.Sees("dev") {
		t.Fatalf("a good ES256 token: %v, %v", id, err)
	}
	// Valid only in an hour: refused (go-oidc allows 5 minutes of skew).
	later := now.Add(time.Hour).Truncate(time.Second)
	_, _, err = s.Authenticate(r, is.sign(t, claims(later), scopes))
	if want := "the access token is not valid before " + later.UTC().Format(time.RFC3339); err == nil || err.Error() != want {
		t.Fatalf("a token valid later: %v\nwant %s", err, want)
	}
	// A token signed with a shared secret is refused before any key is
	// looked for.
	hs, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: []byte(strings.Repeat("k", 32))}, nil)
	tok, _ := jwt.Signed(hs).Claims(claims(now)).Claims(scopes).Serialize()
	if _, _, err = s.Authenticate(r, tok); err == nil || !strings.HasPrefix(err.Error(), "the access token is not a JWT signed with an asymmetric key") {
		t.Fatalf("an HS256 token: %v", err)
	}
}

func TestGroupsClaimIsCarried(t *testing.T) {
	is := newIssuer(t)
	s, err := New(Config{Issuers: []string{is.URL}, Resource: "http://127.0.0.1:8080", GroupsClaim: "groups", NameClaim: "email"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:8080/mcp", nil)
	c := jwt.Claims{Issuer: is.URL, Subject: "u-123", Audience: jwt.Audience{"http://127.0.0.1:8080"}, Expiry: jwt.NewNumericDate(time.Now().Add(time.Hour))}
	id, groups, err := s.Authenticate(r, is.sign(t, c, map[string]any{"email": "ann@example.com", "scope": "switchboard:admin switchboard:workspace:*", "groups": []string{"ops", "dev"}}))
	if err != nil || id.Name != "ann@example.com" || id.Grade != "admin" || !id.Workspaces.All() || strings.Join(groups, ",") != "ops,dev" {
		t.Fatalf("identity %v, groups %v, %v", id, groups, err)
	}
}
