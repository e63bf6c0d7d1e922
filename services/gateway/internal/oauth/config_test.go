package oauth

import (
	"testing"

	"github.com/switchboard-run/switchboard/kit/suite/identity"
)

func TestConfigIsChecked(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Resource: "https://gw.example.com"}, "oauth: name at least one issuer whose tokens the MCP endpoint accepts"},
		{Config{Issuers: []string{"http://idp.example.com"}, Resource: "https://gw.example.com"}, `oauth: the issuer "http://idp.example.com" must be https (http only on loopback)`},
		{Config{Issuers: []string{"https://idp.example.com"}}, `oauth: the resource "" is not an absolute URL`},
		{Config{Issuers: []string{"https://idp.example.com"}, Resource: "https://gw.example.com/?a=b"}, `oauth: the resource "https://gw.example.com/?a=b" may hold no query or fragment (RFC 8707)`},
		{Config{Issuers: []string{"https://idp.example.com"}, Resource: "https://gw.example.com", Introspection: Introspection{URL: "https://idp.example.com/introspect"}},
			"oauth: the introspection endpoint needs the client id the gateway authenticates with"},
	} {
		if _, err := New(c.cfg, nil); err == nil || err.Error() != c.want {
			t.Errorf("New(%+v) = %v\nwant %s", c.cfg, err, c.want)
		}
	}
	s, err := New(Config{Issuers: []string{"http://127.0.0.1:9998"}, Resource: "http://127.0.0.1:8080/"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.cfg.Resource != "http://127.0.0.1:8080" || s.cfg.NameClaim != "sub" || s.cfg.WorkspaceScope != DefaultWorkspaceScope {
		t.Fatalf("defaults: %+v", s.cfg)
	}
}

func TestScopesMapToGradeAndWorkspaces(t *testing.T) {
	c, _ := Config{Issuers: []string{"https://i.example"}, Resource: "https://gw.example"}.withDefaults()
	if g, ok := c.grade([]string{"switchboard:driver", "switchboard:admin"}); !ok || g != identity.Admin {
		t.Fatalf("admin and driver: %v %v", g, ok)
	}
	if _, ok := c.grade([]string{"openid", "switchboard:workspace:dev"}); ok {
		t.Fatal("a token without a grade scope was given a grade")
	}
	ws, err := c.workspaces([]string{"switchboard:workspace:dev", "switchboard:workspace:ops", "openid"})
	if err != nil || !ws.Sees("dev") || !ws.Sees("ops") || ws.Sees("prod") {
		t.Fatalf("workspaces %v, %v", ws.List(), err)
	}
	if ws, _ := c.workspaces([]string{"switchboard:workspace:*"}); !ws.All() {
		t.Fatal("the star scope is not every workspace")
	}
	if _, err := c.workspaces([]string{"switchboard:workspace:Bad Name"}); err == nil {
		t.Fatal("a bad workspace name was taken")
	}
}

func TestChallengeSentenceStaysQuoted(t *testing.T) {
	if got := quotable("a \"quoted\" \\ line\nbreak"); got != "a 'quoted' ' line'break" {
		t.Fatalf("quotable = %q", got)
	}
}
