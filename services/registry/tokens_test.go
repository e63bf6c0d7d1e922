package registry_test

import (
	"context"
	"crypto/sha256"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/registry"
	"github.com/switchboard-run/switchboard/services/registry/internal/records"
)

func TestTokens(t *testing.T) {
	t.Parallel()
	e := serve(t, nil)
	mint := func(id, grade, note string, workspaces ...string) *registryv1.CreateTokenResponse {
		t.Helper()
		res, err := e.reg.CreateToken(admin, &registryv1.CreateTokenRequest{Identity: id, Grade: grade, Note: note, Workspaces: workspaces})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	a := mint("alice", "driver", "laptop curl", "ops", "dev")
	b := mint("build box", "host", "")
	if !regexp.MustCompile(`^sbt_[A-Za-z0-9_-]{43}$`).MatchString(a.Secret) {
		t.Fatalf("secret %q is not sbt_ + 32 bytes of unpadded base64url", a.Secret)
	}
	if !regexp.MustCompile(`^tok-[0-9a-f]{8}$`).MatchString(a.Token.Id) || a.Token.Created == nil {
		t.Fatalf("record %v: want id tok-<8 hex digits> and a creation time", a.Token)
	}
	if a.Secret == b.Secret || a.Token.Id == b.Token.Id {
		t.Fatal("two tokens share a secret or an id")
	}

	list, err := e.reg.ListTokens(admin, &registryv1.ListTokensRequest{})
	if err != nil || len(list.Tokens) != 2 {
		t.Fatalf("ListTokens = %v, %v", list, err)
	}
	if list.Tokens[0].Id > list.Tokens[1].Id {
		t.Fatalf("tokens are not sorted by id: %v", list.Tokens)
	}
	for _, tok := range list.Tokens {
		want := a.Token
		if tok.Id == b.Token.Id {
			want = b.Token
		}
		if !proto.Equal(tok, want) {
			t.Fatalf("listed %v, minted %v", tok, want)
		}
	}

	who, err := e.reg.AuthenticateToken(svc, &registryv1.AuthenticateTokenRequest{Secret: b.Secret})
	if err != nil || who.Identity != "build box" || who.Grade != "host" {
		t.Fatalf("AuthenticateToken = %v, %v; want build box (host)", who, err)
	}
	revoked, err := e.reg.RevokeToken(admin, &registryv1.RevokeTokenRequest{Id: b.Token.Id})
	if err != nil || !proto.Equal(revoked.Token, b.Token) {
		t.Fatalf("RevokeToken = %v, %v", revoked, err)
	}
	_, err = e.reg.AuthenticateToken(svc, &registryv1.AuthenticateTokenRequest{Secret: b.Secret})
	testkit.Refused(t, err, codes.Unauthenticated, "unknown or revoked token")
	if who, err := e.reg.AuthenticateToken(svc, &registryv1.AuthenticateTokenRequest{Secret: a.Secret}); err != nil || who.Identity != "alice" {
		t.Fatalf("the other token stopped working: %v, %v", who, err)
	}
}

func TestATokenCarriesItsGradeWorkspacesAndExpiry(t *testing.T) {
	t.Parallel()
	e := serve(t, nil)
	res, err := e.reg.CreateToken(admin, &registryv1.CreateTokenRequest{Identity: "alice", Workspaces: []string{"ops", "dev", "ops"}})
	if err != nil {
		t.Fatal(err)
	}
	tok := res.Token
	if tok.Grade != "driver" || !slices.Equal(tok.Workspaces, []string{"dev", "ops"}) {
		t.Fatalf("token %v: want a driver of [dev ops]", tok)
	}
	if got := tok.Expires.AsTime().Sub(tok.Created.AsTime()); got != registry.DefaultTokenTTL {
		t.Fatalf("the token expires %v after its creation, want %v", got, registry.DefaultTokenTTL)
	}
	who, err := e.reg.AuthenticateToken(svc, &registryv1.AuthenticateTokenRequest{Secret: res.Secret})
	if err != nil || who.Grade != "driver" || !slices.Equal(who.Workspaces, tok.Workspaces) || !proto.Equal(who.Expires, tok.Expires) {
		t.Fatalf("AuthenticateToken = %v, %v", who, err)
	}
	res, err = e.reg.CreateToken(admin, &registryv1.CreateTokenRequest{Identity: "root", Grade: "admin", Workspaces: []string{"*"}, Ttl: durationpb.New(time.Hour)})
	if err != nil || res.Token.Expires.AsTime().Sub(res.Token.Created.AsTime()) != time.Hour || res.Token.Workspaces[0] != "*" {
		t.Fatalf("an admin token of every workspace for an hour: %v, %v", res, err)
	}
}

// No token is minted to work longer than the registry's --max-token-ttl:
// a longer ttl is refused, and a token without one works that long at
// most.
func TestATokenWorksNoLongerThanTheCap(t *testing.T) {
	t.Parallel()
	e := serve(t, nil, func(c *registry.Config) { c.MaxTokenTTL = 24 * time.Hour })
	_, err := e.reg.CreateToken(admin, &registryv1.CreateTokenRequest{Identity: "root", Grade: "admin", Workspaces: []string{"*"},
		Ttl: durationpb.New(3153600000 * time.Second)})
	testkit.Refused(t, err, codes.InvalidArgument, "create token: ttl (--ttl) 876000h0m0s is longer than the 24h0m0s a token may work here (the registry's --max-token-ttl)")
	res, err := e.reg.CreateToken(admin, &registryv1.CreateTokenRequest{Identity: "alice", Workspaces: []string{"dev"}})
	if err != nil || res.Token.Expires.AsTime().Sub(res.Token.Created.AsTime()) != 24*time.Hour {
		t.Fatalf("a token without a ttl under a cap of a day: %v, %v; want it to expire after a day", res, err)
	}
}

func TestAnExpiredTokenIsRefused(t *testing.T) {
	t.Parallel()
	e := serve(t, nil)
	res, err := e.reg.CreateToken(admin, &registryv1.CreateTokenRequest{Identity: "alice", Workspaces: []string{"dev"}, Ttl: durationpb.New(time.Nanosecond)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.reg.AuthenticateToken(svc, &registryv1.AuthenticateTokenRequest{Secret: res.Secret})
	want := `token ` + res.Token.Id + ` of "alice" expired at ` + res.Token.Expires.AsTime().UTC().Format(time.RFC3339) +
		`; an admin mints a new one (switchboard tokens create)`
	testkit.Refused(t, err, codes.Unauthenticated, want)
}

// TestTokensOfAnEarlierVersionAreAdminsThatExpire: a token minted when
// grades were operator, host and service, and tokens did not expire.
func TestTokensOfAnEarlierVersionAreAdminsThatExpire(t *testing.T) {
	t.Parallel()
	e := serve(t, nil)
	js, err := jetstream.New(e.nc)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := records.Open(context.Background(), js, 1, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	mint := func(secret string, age time.Duration) {
		tok := &registryv1.Token{Id: "tok-" + secret[4:12], Identity: "old", Grade: "operator", Created: timestamppb.New(time.Now().Add(-age))}
		if _, err := rec.CreateToken(context.Background(), tok, sha256.Sum256([]byte(secret))); err != nil {
			t.Fatal(err)
		}
	}
	mint("sbt_aaaaaaaaaa", time.Hour)
	mint("sbt_bbbbbbbbbb", registry.DefaultTokenTTL+time.Hour)
	who, err := e.reg.AuthenticateToken(svc, &registryv1.AuthenticateTokenRequest{Secret: "sbt_aaaaaaaaaa"})
	if err != nil || who.Grade != "admin" || !slices.Equal(who.Workspaces, []string{"*"}) {
		t.Fatalf("an operator token of an hour ago: %v, %v; want an admin of every workspace", who, err)
	}
	_, err = e.reg.AuthenticateToken(svc, &registryv1.AuthenticateTokenRequest{Secret: "sbt_bbbbbbbbbb"})
	if st, _ := status.FromError(err); st.Code() != codes.Unauthenticated || !strings.Contains(st.Message(), "expired at") {
		t.Fatalf("an operator token older than %v: %v; want it expired", registry.DefaultTokenTTL, err)
	}
}
