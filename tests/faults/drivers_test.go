package faults

import (
	"context"
	"net/http"
	"testing"
	"time"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/tests/internal/drill"
	"github.com/switchboard-run/switchboard/tests/internal/procs"
)

// targets are the clients every driver calls in turn: the tool host, whose
// runs are recorded, and the exclusive mount; each serves a tool "echo"
// answering its input.
var targets = []drill.Target{drill.Echo("laptop", true), drill.Echo("solo", false)}

// asDriver is the dev-mode identity the drivers call as.
var asDriver = http.Header{"Switchboard-Identity": {"driver"}, "Switchboard-Grade": {string(identity.Driver)}}

// grpcDriver calls through the mailbox replicas at addrs (one connection
// balanced over them), as a gRPC client does.
func grpcDriver(t *testing.T, addrs string) *drill.Driver {
	mb := mailboxv1.NewMailboxServiceClient(testkit.Dial(t, addrs))
	return drill.GRPC(mb, func(ctx context.Context) context.Context {
		return identity.As(ctx, identity.Identity{Name: "driver", Grade: identity.Driver})
	}, targets)
}

// actDriver calls through /v1/act at url.
func actDriver(url string) *drill.Driver {
	return drill.Act(url, &http.Client{Timeout: time.Minute}, asDriver, targets)
}

// mcpDriver calls from one MCP session of protocol revision rev through
// the endpoint at url, the same session throughout.
func mcpDriver(t *testing.T, url, rev string) *drill.Driver {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := procs.MCPDriver(ctx, url+"/mcp", rev)
	if err != nil {
		t.Fatalf("an MCP session of %s through the front: %v", rev, err)
	}
	t.Cleanup(func() { cs.Close() })
	return drill.MCP("mcp-"+rev, cs, targets)
}

// start starts drivers and returns when.
func start(drivers []*drill.Driver) time.Time {
	began := time.Now()
	for _, d := range drivers {
		d.Start()
	}
	return began
}

// stop stops drivers, waiting for their calls under way.
func stop(drivers []*drill.Driver) {
	for _, d := range drivers {
		d.Stop()
	}
}
