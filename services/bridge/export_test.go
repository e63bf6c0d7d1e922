package bridge

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/bridge/serverjson"
)

// ExportServers describes each mount a workspace holds as a server.json
// entry, names why a mount has none, never writes a header's value, and
// is an admin's.
func TestExportServersDescribesAWorkspacesMounts(t *testing.T) {
	t.Parallel()
	s := newSuite(t, timing{})
	b := newBlocker(t)
	remote := httpServer(b.url)
	remote.GetHttp().Headers = map[string]string{"Authorization": "Bearer s3cret"}
	s.mount(t, "remote", remote)
	s.mount(t, "local", stdioServer(testkit.Tool(t, "everything-server")))
	ps := testkit.NewPetStore(t)
	s.mount(t, "pets", openapiServer(&bridgev1.OpenApiTransport{SpecUrl: ps.SpecURL()}))
	for _, c := range []string{"remote", "local", "pets"} {
		s.join(t, "team", c)
	}
	s.mount(t, "other", stdioServer(testkit.Tool(t, "everything-server")))

	res, err := s.bridge.ExportServers(admin, &bridgev1.ExportServersRequest{Workspace: "team"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*bridgev1.ExportedServer{}
	for _, r := range res.GetServers() {
		got[r.GetClient()] = r
	}
	if len(got) != 3 || got["other"] != nil {
		t.Fatalf("exported %v; want the three members of team", res.GetServers())
	}
	entries, err := serverjson.Parse([]byte(got["remote"].GetServerJson()))
	if err != nil || len(entries[0].Remotes) != 1 || entries[0].Remotes[0].URL != b.url || entries[0].Remotes[0].Headers[0].Name != "Authorization" ||
		strings.Contains(got["remote"].GetServerJson(), "s3cret") {
		t.Errorf("the remote's entry (%v):\n%s", err, got["remote"].GetServerJson())
	}
	if !strings.Contains(got["local"].GetSkipped(), "is not a package runtime the MCP Registry knows (npx, uvx, docker)") ||
		!strings.Contains(got["pets"].GetSkipped(), "an HTTP API mounted from its OpenAPI document is no MCP server") {
		t.Errorf("skipped: local %q, pets %q", got["local"].GetSkipped(), got["pets"].GetSkipped())
	}
	_, err = s.bridge.ExportServers(driver, &bridgev1.ExportServersRequest{})
	if status.Code(err) != codes.PermissionDenied {
		t.Errorf("a driver's export = %v; want PermissionDenied", err)
	}
}
