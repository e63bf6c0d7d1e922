package registrytest

import (
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// SampleSecret is the secret of Sample's token.
const SampleSecret = "sbt_minted-by-the-bbolt-registry"

// Sample is a registry.db's worth of each kind of record: sets,
// last_seen, memberships and a token.
var Sample = Earlier{
	Adverts: map[string][]*registryv1.Tool{"laptop": {tool("grep"), tool("read-file")}, "box": {tool("make")}},
	Seen:    map[string]time.Time{"idle": time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)},
	Members: map[string][]string{"team": {"laptop", "idle"}, "default": {"laptop", "box"}},
	Tokens: map[string]*registryv1.Token{SampleSecret: {Id: "tok-0badcafe", Identity: "alice", Grade: "operator",
		Note: "minted before the move to NATS", Created: timestamppb.New(time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC))}},
}

func tool(name string) *registryv1.Tool {
	return &registryv1.Tool{Name: name, Description: "does " + name, InputSchema: `{"type":"object"}`}
}

// CheckSample fails t unless reg serves what Sample holds: the tools of
// each workspace, its clients with their last_seen, and the token, which
// still authenticates.
func CheckSample(t testing.TB, reg registryv1.RegistryServiceClient) {
	t.Helper()
	op, svc := testkit.As("ops", identity.Admin), testkit.As("gateway", identity.Service)
	for ws, want := range map[string][]string{
		"team":    {"laptop_grep", "laptop_read-file"},
		"default": {"box_make", "laptop_grep", "laptop_read-file"},
	} {
		res, err := reg.ListTools(op, &registryv1.ListToolsRequest{Workspace: ws})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, tl := range res.GetTools() {
			got = append(got, tl.GetPresentedName())
		}
		if slices.Sort(got); !slices.Equal(got, want) {
			t.Fatalf("workspace %s lists %v after the import, want %v", ws, got, want)
		}
	}
	res, err := reg.ListClients(op, &registryv1.ListClientsRequest{Workspace: "team"})
	if err != nil || len(res.GetRows()) != 2 || res.GetRows()[1].GetClient() != "laptop" ||
		!res.GetRows()[0].GetLastSeen().AsTime().Equal(Sample.Seen["idle"]) {
		t.Fatalf("team's clients after the import: %v, %v; want idle (seen %v) and laptop", res, err, Sample.Seen["idle"])
	}
	who, err := reg.AuthenticateToken(svc, &registryv1.AuthenticateTokenRequest{Secret: SampleSecret})
	// The operator of then is an admin of every workspace now, and the
	// token, which had no expiry, runs from the import.
	if err != nil || who.GetIdentity() != "alice" || who.GetGrade() != "admin" || !slices.Equal(who.GetWorkspaces(), []string{"*"}) ||
		who.GetExpires().AsTime().Before(time.Now()) {
		t.Fatalf("the token minted before the import: %v, %v", who, err)
	}
	toks, err := reg.ListTokens(op, &registryv1.ListTokensRequest{})
	if err != nil || len(toks.GetTokens()) != 1 || toks.GetTokens()[0].GetNote() != Sample.Tokens[SampleSecret].GetNote() {
		t.Fatalf("tokens after the import: %v, %v", toks, err)
	}
}
