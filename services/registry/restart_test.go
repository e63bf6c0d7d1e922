package registry_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/grpcclient"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/registry"
)

// TestStateSurvivesARestart restarts an in-process registry on the same
// NATS: sets, memberships, last_seen and tokens come back, and presence is
// what the mailbox holds (a read kept open across the restart stays).
func TestStateSurvivesARestart(t *testing.T) {
	t.Parallel()
	e := serve(t, nil)
	e.advertise("box", tool("grep"), tool("read file"))
	e.register("team", "box")
	e.register("team", "idle")
	p := e.presence()
	p.send("idle", true, "")
	waitPresent(e, "idle", true)
	p.send("idle", false, "")
	waitPresent(e, "idle", false)
	tok, err := e.reg.CreateToken(admin, &registryv1.CreateTokenRequest{Identity: "alice", Grade: "host"})
	if err != nil {
		t.Fatal(err)
	}
	before := listClients(t, e, "team")
	beforeTools, _ := e.reg.ListTools(admin, &registryv1.ListToolsRequest{Workspace: "team"})
	e.stop()

	e = serve(t, e.nats)
	after := listClients(t, e, "team")
	if len(after) != 2 || after[1].Present {
		t.Fatalf("after restart rows = %v; want box and idle, absent", after)
	}
	for i := range before {
		if !proto.Equal(before[i], after[i]) {
			t.Fatalf("row %d before restart %v, after %v", i, before[i], after[i])
		}
	}
	afterTools, _ := e.reg.ListTools(admin, &registryv1.ListToolsRequest{Workspace: "team"})
	if !proto.Equal(beforeTools, afterTools) {
		t.Fatalf("tools before restart %v, after %v", beforeTools, afterTools)
	}
	if who, err := e.reg.AuthenticateToken(svc, &registryv1.AuthenticateTokenRequest{Secret: tok.Secret}); err != nil || who.Identity != "alice" {
		t.Fatalf("token after restart: %v, %v", who, err)
	}
}

// TestTwoReplicasServeOneState runs two registries on one NATS: what one
// stores, the other serves, and a write on either is read back at once on
// that replica.
func TestTwoReplicasServeOneState(t *testing.T) {
	t.Parallel()
	a := serve(t, nil)
	b := serve(t, a.nats)
	if !a.advertise("box", tool("grep")) {
		t.Fatal("the first set did not write")
	}
	if b.advertise("box", tool("grep")) {
		t.Fatal("re-presenting the set in force on the other replica wrote")
	}
	b.register("team", "box")
	if rows := listClients(t, b, "team"); len(rows) != 1 || len(rows[0].Tools) != 1 {
		t.Fatalf("replica b lists %v", rows)
	}
	testkit.Eventually(t, "replica a to see the membership made on b", 10*time.Second, func() bool {
		res, err := a.reg.ListClients(admin, &registryv1.ListClientsRequest{Workspace: "team"})
		return err == nil && len(res.Rows) == 1
	})
}

func TestMainRefusesBadConfiguration(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no NATS", []string{"--dev"}, "the registry keeps its state in NATS: name its servers with --nats"},
		{"NATS out of reach", []string{"--dev", "--nats", "nats://127.0.0.1:1"}, "cannot reach NATS at nats://127.0.0.1:1"},
		{"the data directory of an earlier version", []string{"--dev", "--data-dir", "d"}, "--data-dir is gone: the registry keeps its state in NATS"},
		{"dev mode on a public address", []string{"--dev", "--nats", "nats://127.0.0.1:1", "--listen", "0.0.0.0:7731"}, `dev mode refuses to listen on "0.0.0.0:7731"`},
		{"neither dev mode nor TLS", []string{"--nats", "nats://127.0.0.1:1"}, "no TLS material named"},
		{"a watch buffer of zero", []string{"--dev", "--nats", "nats://127.0.0.1:1", "--watch-buffer", "0"}, "--watch-buffer 0 is below 1"},
		{"an unknown log level", []string{"--dev", "--nats", "nats://127.0.0.1:1", "--log-level", "loud"}, `log level "loud"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := tt.args
			for i, a := range args {
				if a == "d" {
					args[i] = t.TempDir()
				}
			}
			var stderr bytes.Buffer
			err := registry.Main(context.Background(), args, &stderr)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Main(%q) = %v, want an error holding %q", args, err, tt.want)
			}
		})
	}
}

// TestProcessRestart runs the real registry binary, stops it with SIGTERM
// and starts it again on the same NATS.
func TestProcessRestart(t *testing.T) {
	t.Parallel()
	bin := testkit.Build(t, "github.com/switchboard-run/switchboard/services/registry/cmd/registry")
	ns := startNATS(t)
	addr := testkit.FreeAddr(t)
	start := func() (registryv1.RegistryServiceClient, *testkit.Proc) {
		p := testkit.Start(t, bin, "--dev", "--listen", addr, "--nats", ns.ClientURL())
		testkit.WaitHealthy(t, addr, registryv1.RegistryService_ServiceDesc.ServiceName, 20*time.Second)
		cc, err := grpcclient.Dial(addr, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cc.Close() })
		return registryv1.NewRegistryServiceClient(cc), p
	}
	reg, p := start()
	if _, err := reg.Advertise(host("laptop"), &registryv1.AdvertiseRequest{Tools: tools("grep", "list (files)")}); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Advertise(host("box"), &registryv1.AdvertiseRequest{Tools: tools("make")}); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.RegisterClient(admin, &registryv1.RegisterClientRequest{Workspace: "team", Client: "laptop"}); err != nil {
		t.Fatal(err)
	}
	snapshot := func(reg registryv1.RegistryServiceClient) []proto.Message {
		var out []proto.Message
		for _, ws := range []string{"default", "team"} {
			tl, err := reg.ListTools(admin, &registryv1.ListToolsRequest{Workspace: ws})
			if err != nil {
				t.Fatal(err)
			}
			cl, err := reg.ListClients(admin, &registryv1.ListClientsRequest{Workspace: ws})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, tl, cl)
		}
		return out
	}
	before := snapshot(reg)
	if len(before[0].(*registryv1.ListToolsResponse).Tools) != 3 {
		t.Fatalf("default lists %v, want 3 tools", before[0])
	}
	if err := p.Stop(10 * time.Second); err != nil {
		t.Fatalf("the registry did not exit cleanly on SIGTERM: %v\n%s", err, p.Output())
	}
	if !strings.Contains(p.Output(), "registry listening") || !strings.Contains(p.Output(), addr) {
		t.Fatalf("the registry did not log where it listens:\n%s", p.Output())
	}
	reg, _ = start()
	after := snapshot(reg)
	for i := range before {
		if !proto.Equal(before[i], after[i]) {
			t.Fatalf("after restart\n%v\nwant\n%v", after[i], before[i])
		}
	}
}
