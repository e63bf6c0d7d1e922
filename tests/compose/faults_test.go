package compose

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/certs"
	"github.com/switchboard-run/switchboard/kit/suite/grpcclient"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/tests/internal/drill"
	"github.com/switchboard-run/switchboard/tests/internal/procs"
)

// faultBound bounds how long the load may take to go on after a fault: a
// lost replica's hand-offs go out again, a NATS node's streams elect new
// leaders, and a node cut off is given up on after its clients' pings.
const faultBound = 3 * time.Minute

// docker-compose.scale.yml under the fault drill's load from this machine
// (gRPC over both mailboxes, /v1/act and MCP through one gateway each, to a
// host here, the example host and an exclusive mount) loses no call and
// runs none twice while a mailbox replica, the mount's bridge and a NATS
// node are killed and restarted in turn, and a NATS node is cut off the
// network and joined again. It logs each failover's time.
func TestEngineComposeScaledDeploymentLosesNothingUnderFaults(t *testing.T) {
	p := newProject(t, "docker-compose.scale.yml")
	t.Logf("docker-compose.scale.yml: up and healthy in %v", p.up())
	admin := p.admin()
	tlsCfg := testkit.Client(t, admin)
	dial := func(addr string) *grpc.ClientConn {
		cc, err := grpcclient.Dial(addr, tlsCfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cc.Close() })
		return cc
	}
	reg := registryv1.NewRegistryServiceClient(dial("127.0.0.1:7731,127.0.0.1:7741"))
	bridges := map[string]bridgev1.BridgeServiceClient{
		"bridge-1": bridgev1.NewBridgeServiceClient(dial("127.0.0.1:7733")),
		"bridge-2": bridgev1.NewBridgeServiceClient(dial("127.0.0.1:7743")),
	}
	runs := laptop(t, p)
	mount(t, bridges["bridge-1"])
	for _, client := range []string{"laptop", "example-host", "solo"} {
		if _, err := reg.RegisterClient(context.Background(), &registryv1.RegisterClientRequest{Workspace: "default", Client: client}); err != nil {
			t.Fatalf("RegisterClient(default, %s): %v", client, err)
		}
	}
	testkit.Eventually(t, "laptop present", time.Minute, func() bool {
		res, err := reg.GetClient(context.Background(), &registryv1.GetClientRequest{Client: "laptop"})
		return err == nil && res.GetRow().GetPresent()
	})

	targets := []drill.Target{drill.Echo("laptop", true), drill.Echo("example-host", false), {Client: "solo", Tool: "json_schema_2020_12_tool",
		Input: func(text string) string { return `{"name":"` + text + `","email":"drill@example.com"}` }}}
	mb := mailboxv1.NewMailboxServiceClient(dial("127.0.0.1:7732,127.0.0.1:7742"))
	drivers := []*drill.Driver{
		drill.GRPC(mb, func(ctx context.Context) context.Context { return ctx }, targets),
		drill.Act("https://localhost:"+p.http2, httpsClient(t, admin), nil, targets),
		drill.MCP("mcp", mcpSession(t, admin, "https://localhost:"+p.http+"/mcp"), targets),
	}
	for _, d := range drivers {
		d.Start()
		t.Cleanup(d.Stop)
	}
	goOn := func(when string, since time.Time) {
		t.Helper()
		if !since.IsZero() {
			t.Logf("%s at %s", when, since.Format("15:04:05.000"))
		}
		for _, d := range drivers {
			if !since.IsZero() {
				t.Logf("%s: %s answered a call begun after it %v later", when, d.Name, d.FirstAnswerAfter(t, "", since, faultBound))
			}
			d.GoOn(t, 3, when, faultBound)
		}
	}
	goOn("before any fault", time.Time{})

	killed := time.Now()
	p.kill("mailbox-1")
	goOn("mailbox-1 killed", killed)
	t.Logf("mailbox-1 healthy again %v after its start", p.restart("mailbox-1"))

	holder, standby := exclusiveHolder(t, bridges)
	killed = time.Now()
	p.kill(holder)
	testkit.Eventually(t, "solo running on "+standby+" alone", faultBound, func() bool {
		return runningSolo(bridges) == standby
	})
	t.Logf("%s killed: %s ran the exclusive mount %v later", holder, standby, time.Since(killed).Round(time.Millisecond))
	goOn(holder+" killed", killed)
	t.Logf("%s healthy again %v after its start", holder, p.restart(holder))

	killed = time.Now()
	p.kill("nats-1")
	goOn("nats-1 killed", killed)
	t.Logf("nats-1 healthy again %v after its start", p.restart("nats-1"))

	network, nats2 := p.name+"_suite", p.container("nats-2")
	cut := time.Now()
	p.engine("network", "disconnect", network, nats2)
	goOn("nats-2 cut off the network", cut)
	p.engine("network", "connect", "--alias", "nats-2", network, nats2)
	rejoined := time.Now()
	p.healthy("nats-2")
	t.Logf("nats-2 healthy %v after it was joined to the network again", time.Since(rejoined).Round(100*time.Millisecond))
	goOn("nats-2 joined again", rejoined)

	for _, d := range drivers {
		d.Stop()
	}
	ran := drill.Runs(t, runs)
	for _, d := range drivers {
		d.Tally(t, ran)
		for _, id := range d.Lost() {
			t.Logf("%s: %s, asked after again once the load stopped: %s", d.Name, id, askAfter(t, admin, "https://localhost:"+p.http, id))
		}
	}
}

// laptop starts a tool host on this machine as "laptop", with a leaf the
// certs step's CA signs (grade host), given both mailbox replicas'
// published ports; its echo records every run in the file it returns.
func laptop(t *testing.T, p *project) (runs string) {
	t.Helper()
	p.compose("run", "--rm", "--no-deps", "certs", "certs", "leaf", "--dir", "/certs", "--name", "laptop", "--grade", "host")
	leaf := p.copyLeaf("laptop")
	dir := t.TempDir()
	runs, tools := filepath.Join(dir, "runs"), filepath.Join(dir, "tools.json")
	if err := os.WriteFile(tools, []byte(drill.EchoTools(runs)), 0o644); err != nil {
		t.Fatal(err)
	}
	// Its tool is the test's own program, so it may read the test's key.
	testkit.Start(t, testkit.Build(t, procs.Module+"cli/cmd/switchboard"), append([]string{"host", "--tools", tools,
		"--registry", "127.0.0.1:7731,127.0.0.1:7741", "--mailbox", "127.0.0.1:7732,127.0.0.1:7742", "--children-may-read-key"},
		testkit.TLSFlags(leaf)...)...)
	return runs
}

// mount mounts the image's everything server as "solo", exclusive: one
// bridge runs it at a time.
func mount(t *testing.T, bridge bridgev1.BridgeServiceClient) {
	t.Helper()
	cfg := &bridgev1.ServerConfig{Exclusive: true, Transport: &bridgev1.ServerConfig_Stdio{
		Stdio: &bridgev1.StdioTransport{Command: "/usr/local/bin/everything-server"}}}
	if _, err := bridge.Mount(context.Background(), &bridgev1.MountRequest{Client: "solo", Config: cfg}); err != nil {
		t.Fatalf("Mount(solo): %v", err)
	}
}

// exclusiveHolder waits until one bridge runs solo and returns its
// service and the other's.
func exclusiveHolder(t *testing.T, bridges map[string]bridgev1.BridgeServiceClient) (holder, standby string) {
	t.Helper()
	testkit.Eventually(t, "solo running on one bridge", faultBound, func() bool {
		holder = runningSolo(bridges)
		return holder != ""
	})
	standby = "bridge-2"
	if holder == standby {
		standby = "bridge-1"
	}
	return holder, standby
}

// runningSolo is the bridge service running solo: the one whose own row
// (its replica name in replica) says it alone runs it; "" while none does.
func runningSolo(bridges map[string]bridgev1.BridgeServiceClient) string {
	for service, bridge := range bridges {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		res, err := bridge.ListServers(ctx, &bridgev1.ListServersRequest{})
		cancel()
		for _, row := range res.GetServers() {
			if err == nil && row.GetClient() == "solo" && row.GetState() == bridgev1.State_STATE_RUNNING &&
				slices.Equal(row.GetRunningOn(), []string{row.GetReplica()}) {
				return service
			}
		}
	}
	return ""
}

// askAfter collects invocation id through the gateway at url, waiting up
// to 30 s: what became of a lost call, for whoever reads the failure.
func askAfter(t *testing.T, admin certs.Files, url, id string) string {
	res, err := httpsClient(t, admin).Post(url+"/v1/act", "application/json",
		strings.NewReader(`{"op":"capture","invocation":"`+id+`","wait":"30s"}`))
	if err != nil {
		return err.Error()
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
	return res.Status + " " + string(body)
}
