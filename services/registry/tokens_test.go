package registry_test

import (
	"regexp"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

func TestTokens(t *testing.T) {
	t.Parallel()
	e := serve(t, nil)
	mint := func(id, grade, note string) *registryv1.CreateTokenResponse {
		t.Helper()
		res, err := e.reg.CreateToken(op, &registryv1.CreateTokenRequest{Identity: id, Grade: grade, Note: note})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	a := mint("alice", "operator", "laptop curl")
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

	list, err := e.reg.ListTokens(op, &registryv1.ListTokensRequest{})
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
	revoked, err := e.reg.RevokeToken(op, &registryv1.RevokeTokenRequest{Id: b.Token.Id})
	if err != nil || !proto.Equal(revoked.Token, b.Token) {
		t.Fatalf("RevokeToken = %v, %v", revoked, err)
	}
	_, err = e.reg.AuthenticateToken(svc, &registryv1.AuthenticateTokenRequest{Secret: b.Secret})
	testkit.Refused(t, err, codes.Unauthenticated, "unknown or revoked token")
	if who, err := e.reg.AuthenticateToken(svc, &registryv1.AuthenticateTokenRequest{Secret: a.Secret}); err != nil || who.Identity != "alice" {
		t.Fatalf("the other token stopped working: %v, %v", who, err)
	}
}
