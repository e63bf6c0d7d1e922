package registry_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/registry/internal/records"
)

// Two registry processes on a three-node NATS cluster, the bucket kept in
// three copies (--nats-replicas 3), serve one state: what either writes,
// both serve. The node that leads the bucket is shut down: nothing written
// is lost, and both replicas go on serving and taking writes.
func TestTwoReplicasOnAThreeNodeClusterLoseNothingWhenANodeGoes(t *testing.T) {
	t.Parallel()
	nodes := testkit.NATSCluster(t, 3)
	bin := testkit.Build(t, "github.com/switchboard-run/switchboard/services/registry/cmd/registry")
	var replicas []registryv1.RegistryServiceClient
	for range 2 {
		addr := testkit.FreeAddr(t)
		testkit.Start(t, bin, "--dev", "--listen", addr, "--nats", testkit.URLs(nodes), "--nats-replicas", "3")
		testkit.WaitHealthy(t, addr, registryv1.RegistryService_ServiceDesc.ServiceName, 30*time.Second)
		replicas = append(replicas, registryv1.NewRegistryServiceClient(testkit.Dial(t, addr)))
	}
	a, b := replicas[0], replicas[1]
	if _, err := a.Advertise(host("laptop"), &registryv1.AdvertiseRequest{Tools: tools("grep", "make")}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Advertise(host("box"), &registryv1.AdvertiseRequest{Tools: tools("deploy")}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.RegisterClient(admin, &registryv1.RegisterClientRequest{Workspace: "team", Client: "laptop"}); err != nil {
		t.Fatal(err)
	}
	tok, err := a.CreateToken(admin, &registryv1.CreateTokenRequest{Identity: "alice", Grade: "driver", Workspaces: []string{"team"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"box_deploy", "laptop_grep", "laptop_make"}
	for i, reg := range replicas {
		waitServes(t, reg, want, fmt.Sprintf("replica %c to serve what both wrote", 'a'+i))
	}
	before := snapshotOf(t, a)

	leader, copies := testkit.StreamLeader(t, nodes, "KV_"+records.Bucket)
	if copies != len(nodes)-1 {
		t.Fatalf("the registry's bucket keeps %d copies besides its leader's, want %d", copies, len(nodes)-1)
	}
	t.Logf("shutting down %s, the leader of the registry's bucket", leader.Name())
	leader.Shutdown()

	// A write made at once waits out the bucket's election, not refused.
	ctx, cancel := context.WithTimeout(host("desk"), 30*time.Second)
	defer cancel()
	if _, err := b.Advertise(ctx, &registryv1.AdvertiseRequest{Tools: tools("print")}); err != nil {
		t.Fatalf("a write on replica b as the node went: %v; want it to wait out the election", err)
	}
	want = []string{"box_deploy", "desk_print", "laptop_grep", "laptop_make"}
	for i, reg := range replicas {
		waitServes(t, reg, want, fmt.Sprintf("replica %c to serve every write after the node went", 'a'+i))
		if who, err := reg.AuthenticateToken(svc, &registryv1.AuthenticateTokenRequest{Secret: tok.GetSecret()}); err != nil || who.GetIdentity() != "alice" {
			t.Fatalf("the token on replica %c after the node went: %v, %v", 'a'+i, who, err)
		}
		after := snapshotOf(t, reg)
		if !proto.Equal(before, after) {
			t.Fatalf("team on replica %c after the node went:\n%v\nwant\n%v", 'a'+i, after, before)
		}
	}
}

// waitServes waits until reg lists exactly want in the workspace default.
func waitServes(t *testing.T, reg registryv1.RegistryServiceClient, want []string, what string) {
	t.Helper()
	testkit.Eventually(t, what, 30*time.Second, func() bool {
		res, err := reg.ListTools(admin, &registryv1.ListToolsRequest{Workspace: "default"})
		var got []string
		for _, tl := range res.GetTools() {
			got = append(got, tl.GetPresentedName())
		}
		slices.Sort(got)
		return err == nil && slices.Equal(got, want)
	})
}

// snapshotOf is the workspace team as reg lists it.
func snapshotOf(t *testing.T, reg registryv1.RegistryServiceClient) *registryv1.ListClientsResponse {
	t.Helper()
	res, err := reg.ListClients(admin, &registryv1.ListClientsRequest{Workspace: "team"})
	if err != nil {
		t.Fatal(err)
	}
	return res
}
