package identity_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/switchboard-run/switchboard/kit/suite/certs"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
)

// leaf mints a certificate named name with OU grade ("" for none) and
// parses it, as a verified chain would hold it.
func leaf(t *testing.T, ca *certs.CA, name, grade string) *x509.Certificate {
	t.Helper()
	l, err := ca.Mint(certs.LeafSpec{Name: name, Grade: grade, Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(l.CertPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// incoming is a server-side context: a verified peer certificate (nil for
// none) and incoming metadata.
func incoming(cert *x509.Certificate, md metadata.MD) context.Context {
	ctx := metadata.NewIncomingContext(context.Background(), md)
	if cert == nil {
		return ctx
	}
	return peer.NewContext(ctx, &peer.Peer{AuthInfo: credentials.TLSInfo{
		State: tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{cert}}},
	}})
}

// asserting is the metadata of an assertion of name with grade, and
// workspaces when ws is not nil.
func asserting(name string, grade identity.Grade, ws *string) metadata.MD {
	md := metadata.Pairs(identity.MetadataName, name, identity.MetadataGrade, string(grade))
	if ws != nil {
		md.Set(identity.MetadataWorkspaces, *ws)
	}
	return md
}

func ptr(s string) *string { return &s }

func TestProductionIdentityAndOnBehalfOfScopes(t *testing.T) {
	t.Parallel()
	ca, err := certs.MintCA("test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	gateway, bridge, mailbox := leaf(t, ca, "gateway", "service"), leaf(t, ca, "bridge", "service"), leaf(t, ca, "mailbox", "service")
	auth := identity.Authenticator{}
	for _, tc := range []struct {
		name     string
		cert     *x509.Certificate
		md       metadata.MD
		want     string // the identity, as String writes it
		wantWS   string // its stated workspaces; "-" when none are stated
		wantCode codes.Code
		wantMsg  string
	}{
		{name: "a certificate's grade is its OU", cert: leaf(t, ca, "alice", "driver"), want: "alice (driver)", wantWS: "-"},
		{name: "an admin certificate is an admin", cert: leaf(t, ca, "root", "admin"), want: "root (admin)", wantWS: "-"},
		{name: "a certificate without an OU is refused", cert: leaf(t, ca, "alice", ""), wantCode: codes.Unauthenticated,
			wantMsg: "the client certificate of \"alice\" names no grade: its OU must be one of host, driver, admin, service or scrape, and it has none"},
		{name: "a certificate with an unknown OU is refused", cert: leaf(t, ca, "alice", "people"), wantCode: codes.Unauthenticated,
			wantMsg: "the client certificate of \"alice\" names no grade: its OU must be one of host, driver, admin, service or scrape, and it has \"people\""},
		{name: "an operator certificate is refused with what to mint instead", cert: leaf(t, ca, "alice", "operator"), wantCode: codes.Unauthenticated,
			wantMsg: `the client certificate of "alice" has OU "operator", a grade that is gone: mint it again with --grade driver or --grade admin`},
		{name: "the gateway may act for a driver and state its workspaces", cert: gateway,
			md: asserting("alice", identity.Driver, ptr("dev,ops")), want: "alice (driver)", wantWS: "dev,ops"},
		{name: "the gateway may act for an admin", cert: gateway, md: asserting("root", identity.Admin, nil), want: "root (admin)", wantWS: "-"},
		{name: "the gateway may act for a host", cert: gateway, md: asserting("laptop", identity.Host, ptr("")), want: "laptop (host)", wantWS: ""},
		{name: "the bridge may act for a host it mounted", cert: bridge, md: asserting("everything", identity.Host, nil), want: "everything (host)", wantWS: "-"},
		{name: "a service may not assert a service", cert: gateway, md: asserting("registry", identity.Service, nil), wantCode: codes.PermissionDenied,
			wantMsg: `"gateway" asserted "registry" as a service: nobody may act on behalf of a service; a service calls with its own certificate`},
		{name: "the bridge may not assert a driver", cert: bridge, md: asserting("alice", identity.Driver, nil), wantCode: codes.PermissionDenied,
			wantMsg: `"bridge" asserted "alice" as a driver, but "bridge" may act only for hosts`},
		{name: "the bridge may not state workspaces", cert: bridge, md: asserting("everything", identity.Host, ptr("*")), wantCode: codes.PermissionDenied,
			wantMsg: `"bridge" stated the workspaces of "everything", but "bridge" may not state anyone's workspaces`},
		{name: "the mailbox may assert nothing", cert: mailbox, md: asserting("laptop", identity.Host, nil), wantCode: codes.PermissionDenied,
			wantMsg: `"mailbox" asserted "laptop" as a host, but "mailbox" acts on behalf of nobody: its calls are its own`},
		{name: "a host may not assert anyone", cert: leaf(t, ca, "laptop", "host"), md: asserting("alice", identity.Driver, nil), wantCode: codes.PermissionDenied,
			wantMsg: `"laptop" is a host and may not act on behalf of "alice": only a service certificate (OU=service) may`},
		{name: "an admin may not assert anyone", cert: leaf(t, ca, "root", "admin"), md: asserting("alice", identity.Driver, nil), wantCode: codes.PermissionDenied,
			wantMsg: `"root" is an admin and may not act on behalf of "alice": only a service certificate (OU=service) may`},
		{name: "an assertion without a grade is refused", cert: gateway, md: metadata.Pairs(identity.MetadataName, "alice"), wantCode: codes.PermissionDenied,
			wantMsg: `"gateway" asserted "alice" without a grade: an assertion names the grade it acts as`},
		{name: "workspaces without a name are refused", cert: gateway, md: metadata.Pairs(identity.MetadataWorkspaces, "*"), wantCode: codes.Unauthenticated,
			wantMsg: `"switchboard-workspaces" is set but "switchboard-identity" is not: workspaces belong to a named identity`},
		{name: "bad workspaces are refused", cert: gateway, md: asserting("alice", identity.Driver, ptr("dev,Ops")), wantCode: codes.Unauthenticated,
			wantMsg: `switchboard-workspaces: workspace name "Ops" is not 1–64 chars of [a-z0-9-] starting with a letter or digit`},
		{name: "no certificate is unauthenticated", wantCode: codes.Unauthenticated, wantMsg: "no peer: this server requires mutual TLS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			id, err := auth.Authenticate(incoming(tc.cert, tc.md))
			if tc.wantCode != codes.OK {
				if st, _ := status.FromError(err); err == nil || st.Code() != tc.wantCode || st.Message() != tc.wantMsg {
					t.Fatalf("got %v, %v\nwant %s %q", id, err, tc.wantCode, tc.wantMsg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			ws := "-"
			if id.Workspaces != nil {
				ws = id.Workspaces.String()
			}
			if id.String() != tc.want || ws != tc.wantWS {
				t.Fatalf("got %v with workspaces %q, want %s with %q", id, ws, tc.want, tc.wantWS)
			}
		})
	}
}

func TestDevModeTrustsLoopback(t *testing.T) {
	t.Parallel()
	auth := identity.Authenticator{Dev: true}
	for _, tc := range []struct {
		name       string
		md         metadata.MD
		want, ws   string
		wantRefuse string
	}{
		{name: "a name without a grade is an admin who sees every workspace", md: metadata.Pairs(identity.MetadataName, "me"), want: "me (admin)", ws: "*"},
		{name: "a named grade is taken as named", md: asserting("alice", identity.Driver, nil), want: "alice (driver)", ws: "*"},
		{name: "even service may be named: loopback is trusted", md: asserting("mailbox", identity.Service, nil), want: "mailbox (service)", ws: "*"},
		{name: "stated workspaces narrow what is seen", md: asserting("alice", identity.Driver, ptr("dev")), want: "alice (driver)", ws: "dev"},
		{name: "the operator grade is gone", md: metadata.Pairs(identity.MetadataName, "me", identity.MetadataGrade, "operator"),
			wantRefuse: `switchboard-grade: grade "operator" is gone: it was split into driver (list, invoke, capture, cancel) and admin (what a driver may, and mount, register, tokens, grants)`},
		{name: "no name is no identity", md: metadata.MD{},
			wantRefuse: `no identity: in dev mode every call names its caller in the "switchboard-identity" metadata key (HTTP header Switchboard-Identity)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			id, err := auth.Authenticate(incoming(nil, tc.md))
			if tc.wantRefuse != "" {
				if st, _ := status.FromError(err); err == nil || st.Message() != tc.wantRefuse {
					t.Fatalf("got %v, %v; want the refusal %q", id, err, tc.wantRefuse)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if id.String() != tc.want || id.Workspaces == nil || id.Workspaces.String() != tc.ws {
				t.Fatalf("got %v with workspaces %v, want %s with %s", id, id.Workspaces, tc.want, tc.ws)
			}
		})
	}
}

func TestAsCarriesStatedWorkspacesOnly(t *testing.T) {
	t.Parallel()
	ws, err := identity.ParseWorkspaces([]string{"ops", "dev"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := identity.As(context.Background(), identity.Identity{Name: "alice", Grade: identity.Driver, Workspaces: &ws})
	md, _ := metadata.FromOutgoingContext(ctx)
	if got := md.Get(identity.MetadataWorkspaces); len(got) != 1 || got[0] != "dev,ops" {
		t.Fatalf("stated workspaces travel as %q", got)
	}
	// Re-asserting someone without stated workspaces drops the earlier ones.
	ctx = identity.As(ctx, identity.Identity{Name: "laptop", Grade: identity.Host})
	md, _ = metadata.FromOutgoingContext(ctx)
	if got := md.Get(identity.MetadataWorkspaces); len(got) != 0 {
		t.Fatalf("an identity without stated workspaces carried %q", got)
	}
}
