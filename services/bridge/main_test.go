package bridge

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	"github.com/switchboard-run/switchboard/kit/suite/grpcclient"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// The bridge run alone, as a real process, in front of the real registry and
// mailbox: it mounts --mcp-config, serves its API, and serves the mounted
// server's invocations; SIGTERM stops it cleanly.
func TestTheBridgeProcess(t *testing.T) {
	t.Parallel()
	s := newSuite(t, timing{})
	bin := testkit.Build(t, "github.com/switchboard-run/switchboard/services/bridge/cmd/bridge")
	file := writeFile(t, "mcp.json", `{"mcpServers":{"proc":{"command":"`+testkit.Tool(t, "everything-server")+`"}}}`)
	addr := testkit.FreeAddr(t)
	p := testkit.Start(t, bin, "--dev", "--listen", addr, "--registry", s.addr, "--mailbox", s.addr, "--nats", s.nats, "--mcp-config", file)
	testkit.WaitHealthy(t, addr, bridgev1.BridgeService_ServiceDesc.ServiceName, 20*time.Second)

	conn, err := grpcclient.Dial(addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	res, err := bridgev1.NewBridgeServiceClient(conn).ListServers(admin, &bridgev1.ListServersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.GetServers()) != 1 || res.GetServers()[0].GetClient() != "proc" || res.GetServers()[0].GetState() != bridgev1.State_STATE_RUNNING {
		t.Fatalf("ListServers = %v", res.GetServers())
	}
	if got := s.call(t, "proc", "test_simple_text", `{}`); got.GetStdout() != "This is a simple text response for testing." {
		t.Errorf("capture = %v", got)
	}
	if err := p.Stop(15 * time.Second); err != nil {
		t.Errorf("the bridge did not stop cleanly on SIGTERM: %v\n%s", err, p.Output())
	}
	if !strings.Contains(p.Output(), "bridge listening") {
		t.Errorf("the bridge did not log where it listens:\n%s", p.Output())
	}
}

func TestMainRefusesBadStarts(t *testing.T) {
	t.Parallel()
	pki := testkit.NewPKI(t)
	mailbox := pki.Leaf(t, "mailbox", "service")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no security choice", []string{"--listen", "127.0.0.1:0"}, "no TLS material named"},
		{"dev mode on a public address", []string{"--dev", "--listen", "0.0.0.0:0"}, `dev mode refuses to listen on "0.0.0.0:0"`},
		{"a bad mcp config", []string{"--dev", "--listen", "127.0.0.1:0", "--mcp-config", "/no/such/mcp.json"}, "mcp config: open /no/such/mcp.json"},
		{"a bad log level", []string{"--dev", "--log-level", "loud"}, `log level "loud"`},
		{"no NATS", []string{"--dev", "--listen", "127.0.0.1:0"}, "the bridge keeps its mounts in NATS, shared by its replicas: name its servers with --nats"},
		{"a certificate not named bridge", []string{"--listen", "127.0.0.1:0", "--tls-ca", mailbox.CA, "--tls-cert", mailbox.Cert, "--tls-key", mailbox.Key},
			`names "mailbox" with grade service: the bridge acts on behalf of others, which the suite admits only from a service certificate named "bridge" (CN=bridge, OU=service)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var stderr bytes.Buffer
			err := Main(ctx, tt.args, &stderr)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Main = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
