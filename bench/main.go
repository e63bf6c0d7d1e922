// Command bench measures the suite against its floors in one run and prints
// the ratios (`make bench`): a plain gRPC echo, the mailbox round trip and
// its throughput, Invoke with 1,000 parked hosts, memory. It writes
// bench/results.json.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

func main() {
	out := flag.String("out", "bench/results.json", "where to write the figures")
	samples := flag.Int("samples", 3000, "timed samples per latency")
	warm := flag.Int("warm", 300, "untimed warm-up calls before each latency")
	window := flag.Duration("window", 3*time.Second, "how long each throughput run lasts")
	echoAddr := flag.String("serve-echo", "", "internal: serve the echo floor on this address")
	proxyAddr := flag.String("serve-proxy", "", "internal: serve the thin MCP proxy in front of -proxy-server on this address")
	proxyServer := flag.String("proxy-server", "", "internal: the stdio MCP server the thin proxy runs")
	only := flag.String("only", "", "run only the steps whose name holds this text (the echo floor always runs)")
	scaleHosts := flag.Int("scale-hosts", 10_000, "hosts the scale step parks on one mailbox replica with one NATS node (make soak: 100,000)")
	scaleHostsR3 := flag.Int("scale-hosts-r3", 10_000, "hosts the scale step parks on one mailbox replica over a three-node NATS cluster")
	scaleQueued := flag.Int("scale-queued", 10000, "invocations of 1 KiB the scale step queues")
	suiteEnv := flag.String("suite-env", "", "NAME=value,… added to the environment of the MCP endpoint step's suite (GOGC=400 to see what the collector costs)")
	profile := flag.String("profile", "", "save CPU and allocation profiles of the suite under the MCP endpoint's load and the JetStream store's 64 drivers in this directory")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *echoAddr != "" {
		if err := serveEcho(ctx, *echoAddr); err != nil {
			fmt.Fprintln(os.Stderr, "bench echo:", err)
			os.Exit(1)
		}
		return
	}
	if *proxyAddr != "" {
		if err := serveProxy(ctx, *proxyAddr, *proxyServer); err != nil {
			fmt.Fprintln(os.Stderr, "bench proxy:", err)
			os.Exit(1)
		}
		return
	}
	r := newReport(*warm, *samples, *window)
	r.only = *only
	r.scaleHosts, r.scaleHostsR3, r.scaleQueued = *scaleHosts, *scaleHostsR3, *scaleQueued
	r.profile = *profile
	if *suiteEnv != "" {
		r.suiteEnv = strings.Split(*suiteEnv, ",")
	}
	if err := run(ctx, r); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	r.print(os.Stdout)
	if err := r.write(*out); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	fmt.Printf("\nwrote %s\n", *out)
}

// run starts the suite's processes, one per service as deployed, an echo
// server for the floor and `switchboard dev`, and measures each step; the
// processes end with the session.
func run(ctx context.Context, r *report) error {
	return testkit.Session(func(t testkit.TB) error { return measure(ctx, t, r) })
}

func measure(ctx context.Context, t testkit.TB, r *report) error {
	dir, err := os.MkdirTemp("", "switchboard-bench-")
	if err != nil {
		return err
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	fmt.Fprintln(os.Stderr, "building the suite…")
	bins := testkit.BuildInto(t, dir, module+"services/registry/cmd/registry", module+"services/mailbox/cmd/mailbox",
		module+"services/bridge/cmd/bridge", module+"services/gateway/cmd/gateway", module+"cli/cmd/switchboard")
	self, err := os.Executable()
	if err != nil {
		return err
	}
	everything := testkit.Tool(t, "everything-server")
	addr := map[string]string{}
	for _, n := range []string{"registry", "mailbox", "bridge", "gateway", "echo", "dev", "dev-http"} {
		addr[n] = testkit.FreeAddr(t)
	}
	ns := testkit.NATS(t) // the split deployment's NATS, in this process
	regProc := testkit.Start(t, bins["registry"], "--dev", "--listen", addr["registry"], "--nats", ns.ClientURL(), "--log-level", "warn")
	regConn := healthy(t, addr["registry"], "")
	mbProc := testkit.Start(t, bins["mailbox"], "--dev", "--listen", addr["mailbox"], "--registry", addr["registry"], "--nats", ns.ClientURL(), "--log-level", "warn")
	mbConn := healthy(t, addr["mailbox"], "switchboard.mailbox.v1.MailboxService")
	brProc := testkit.Start(t, bins["bridge"], "--dev", "--listen", addr["bridge"], "--registry", addr["registry"], "--mailbox", addr["mailbox"], "--nats", ns.ClientURL(), "--log-level", "warn")
	brConn := healthy(t, addr["bridge"], "switchboard.bridge.v1.BridgeService")
	gwProc := testkit.Start(t, bins["gateway"], "--dev", "--listen", addr["gateway"], "--registry", addr["registry"],
		"--mailbox", addr["mailbox"], "--bridge", addr["bridge"], "--log-level", "warn")
	httpHealthy(t, "http://"+addr["gateway"])
	testkit.Start(t, self, "-serve-echo", addr["echo"])
	echoConn := healthy(t, addr["echo"], "bench.Echo")
	testkit.Start(t, bins["switchboard"], "dev", "--grpc", addr["dev"], "--http", addr["dev-http"], "--data", dir+"/dev-data", "--log-level", "warn")
	devConn, _ := healthyDev(t, addr["dev"], "switchboard.bridge.v1.BridgeService", dir+"/dev-data")

	time.Sleep(time.Second) // let the services settle before reading idle RSS
	for _, p := range []struct {
		name string
		proc *testkit.Proc
	}{{"registry", regProc}, {"mailbox", mbProc}, {"bridge", brProc}, {"gateway", gwProc}} {
		n, err := rss(p.name, p.proc)
		if err != nil {
			return err
		}
		r.bytes("rss_idle_"+p.name+"_bytes", n)
	}

	s := &suite{reg: registryv1.NewRegistryServiceClient(regConn), mb: mailboxv1.NewMailboxServiceClient(mbConn),
		br: bridgev1.NewBridgeServiceClient(brConn)}
	embedded := &suite{reg: registryv1.NewRegistryServiceClient(devConn), mb: mailboxv1.NewMailboxServiceClient(devConn),
		br: bridgev1.NewBridgeServiceClient(devConn)}
	var echoFloor floor
	steps := []struct {
		name string
		run  func() error
	}{
		{"echo floor and mailbox round trip", func() error { return floorAndMailbox(ctx, r, s, echoConn, &echoFloor) }},
		{"the embedded suite's mailbox with each store", func() error {
			return stores(ctx, r, t, bins["switchboard"], dir, echoFloor.latency, echoFloor.perSec[64])
		}},
		{"two mailbox replicas on a three-node NATS cluster", func() error { return replicas(ctx, r, t, bins) }},
		{"the gateway round trip", func() error { return gatewayRoundTrip(ctx, r, s, "http://"+addr["gateway"]) }},
		{"an MCP call, direct and through the suite", func() error {
			return mcpCall(ctx, r, embedded, s, everything)
		}},
		{"the mcp endpoint's hot path, against the SDK's own stdio client", func() error {
			return mcpEndpoint(ctx, r, t, bins["switchboard"], self, dir, everything)
		}},
		{"what metrics and traces cost", func() error {
			return observability(ctx, r, t, bins["switchboard"], dir, everything)
		}},
		{"1,000 parked hosts", func() error { return parked(ctx, r, s) }},
		{"bytes per queued invocation", func() error { return queuedBytes(ctx, r, s) }},
		{"scale: parked hosts, queued invocations and calls on one machine", func() error {
			return scaleOut(ctx, r, bins, r.scaleHosts, r.scaleHostsR3, r.scaleQueued)
		}},
	}
	for i, st := range steps {
		if i > 0 && r.only != "" && !strings.Contains(st.name, r.only) {
			continue
		}
		fmt.Fprintf(os.Stderr, "measuring %s…\n", st.name)
		if err := st.run(); err != nil {
			return fmt.Errorf("%s: %w", st.name, err)
		}
	}
	return nil
}
