package registry_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/grpcclient"
	"github.com/switchboard-run/switchboard/kit/logging"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/registry"
)

// TestStateSurvivesARestart restarts an in-process registry on the same
// data directory: sets, memberships, last_seen and tokens come back;
// presence does not.
func TestStateSurvivesARestart(t *testing.T) {
	t.Parallel()
	e := serve(t, "")
	e.advertise("box", tool("grep"), tool("read file"))
	e.register("team", "box")
	e.register("team", "idle")
	p := e.presence()
	p.send("idle", true, "") // last_seen from presence alone is kept at Close
	waitPresent(e, "idle", true)
	tok, err := e.reg.CreateToken(op, &registryv1.CreateTokenRequest{Identity: "alice", Grade: "host"})
	if err != nil {
		t.Fatal(err)
	}
	before := listClients(t, e, "team")
	beforeTools, _ := e.reg.ListTools(op, &registryv1.ListToolsRequest{Workspace: "team"})
	e.stop()

	e = serve(t, e.dir)
	after := listClients(t, e, "team")
	if len(after) != 2 || after[1].Present {
		t.Fatalf("after restart rows = %v; want box and idle, absent", after)
	}
	// Presence is live, never stored; the read idle held was open until the
	// registry stopped, so that is when it was last seen.
	if a, b := after[1].LastSeen.AsTime(), before[1].LastSeen.AsTime(); a.Before(b) {
		t.Fatalf("idle's last_seen went back from %v to %v", b, a)
	}
	before[1].Present, before[1].LastSeen = false, after[1].LastSeen
	for i := range before {
		if !proto.Equal(before[i], after[i]) {
			t.Fatalf("row %d before restart %v, after %v", i, before[i], after[i])
		}
	}
	afterTools, _ := e.reg.ListTools(op, &registryv1.ListToolsRequest{Workspace: "team"})
	if !proto.Equal(beforeTools, afterTools) {
		t.Fatalf("tools before restart %v, after %v", beforeTools, afterTools)
	}
	if who, err := e.reg.AuthenticateToken(svc, &registryv1.AuthenticateTokenRequest{Secret: tok.Secret}); err != nil || who.Identity != "alice" {
		t.Fatalf("token after restart: %v, %v", who, err)
	}
}

func TestSecondRegistryOnTheSameDirectoryFails(t *testing.T) {
	t.Parallel()
	e := serve(t, "")
	_, err := registry.New(registry.Config{DataDir: e.dir, WatchBuffer: 1, MaxTools: 1}, logging.Discard())
	if err == nil || !strings.Contains(err.Error(), "is locked by another process (another registry on the same --data-dir?)") {
		t.Fatalf("second New: %v, want the locked sentence", err)
	}
}

func TestMainRefusesBadConfiguration(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no data directory", []string{"--dev"}, "--data-dir is empty: name the directory where the registry keeps registry.db"},
		{"dev mode on a public address", []string{"--dev", "--data-dir", "d", "--listen", "0.0.0.0:7731"}, `dev mode refuses to listen on "0.0.0.0:7731"`},
		{"neither dev mode nor TLS", []string{"--data-dir", "d"}, "no TLS material named"},
		{"a watch buffer of zero", []string{"--dev", "--data-dir", "d", "--watch-buffer", "0"}, "--watch-buffer 0 is below 1"},
		{"an unknown log level", []string{"--dev", "--data-dir", "d", "--log-level", "loud"}, `log level "loud"`},
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
// and starts it again on the same data directory.
func TestProcessRestart(t *testing.T) {
	t.Parallel()
	bin := testkit.Build(t, "github.com/switchboard-run/switchboard/services/registry/cmd/registry")
	dir := t.TempDir()
	addr := testkit.FreeAddr(t)
	start := func() (registryv1.RegistryServiceClient, *testkit.Proc) {
		p := testkit.Start(t, bin, "--dev", "--listen", addr, "--data-dir", dir)
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
	if _, err := reg.RegisterClient(op, &registryv1.RegisterClientRequest{Workspace: "team", Client: "laptop"}); err != nil {
		t.Fatal(err)
	}
	snapshot := func(reg registryv1.RegistryServiceClient) []proto.Message {
		var out []proto.Message
		for _, ws := range []string{"default", "team"} {
			tl, err := reg.ListTools(op, &registryv1.ListToolsRequest{Workspace: ws})
			if err != nil {
				t.Fatal(err)
			}
			cl, err := reg.ListClients(op, &registryv1.ListClientsRequest{Workspace: ws})
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
