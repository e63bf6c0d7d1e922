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
	"path/filepath"
	"syscall"
	"time"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
)

func main() {
	out := flag.String("out", "bench/results.json", "where to write the figures")
	samples := flag.Int("samples", 3000, "timed samples per latency")
	warm := flag.Int("warm", 300, "untimed warm-up calls before each latency")
	window := flag.Duration("window", 3*time.Second, "how long each throughput run lasts")
	echoAddr := flag.String("serve-echo", "", "internal: serve the echo floor on this address")
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
	r := newReport(*warm, *samples, *window)
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

func run(ctx context.Context, r *report) error {
	dir, err := os.MkdirTemp("", "switchboard-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	fmt.Fprintln(os.Stderr, "building the suite…")
	bins, err := binaries(dir, "services/registry/cmd/registry", "services/mailbox/cmd/mailbox",
		"services/bridge/cmd/bridge", "services/gateway/cmd/gateway", "cli/cmd/switchboard")
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var procs []*proc
	defer func() {
		for _, p := range procs {
			p.stop()
		}
	}()
	addr := map[string]string{}
	everything, err := filepath.Abs("bin/everything-server")
	if err != nil {
		return err
	}
	if _, err := os.Stat(everything); err != nil {
		return fmt.Errorf("%s is missing: run make tools (make bench does)", everything)
	}
	for _, n := range []string{"registry", "mailbox", "bridge", "gateway", "echo", "dev", "dev-http"} {
		if addr[n], err = freeAddr(); err != nil {
			return err
		}
	}
	launch := func(name, bin string, args ...string) (*proc, error) {
		p, err := start(name, bin, args...)
		if err == nil {
			procs = append(procs, p)
		}
		return p, err
	}
	regProc, err := launch("registry", bins["registry"], "--dev", "--listen", addr["registry"], "--data-dir", dir+"/data", "--log-level", "warn")
	if err != nil {
		return err
	}
	regConn, err := healthy(ctx, addr["registry"], "")
	if err != nil {
		return err
	}
	defer regConn.Close()
	mbProc, err := launch("mailbox", bins["mailbox"], "--dev", "--listen", addr["mailbox"], "--registry", addr["registry"], "--log-level", "warn")
	if err != nil {
		return err
	}
	mbConn, err := healthy(ctx, addr["mailbox"], mailboxv1.MailboxService_ServiceDesc.ServiceName)
	if err != nil {
		return err
	}
	defer mbConn.Close()
	brProc, err := launch("bridge", bins["bridge"], "--dev", "--listen", addr["bridge"], "--registry", addr["registry"], "--mailbox", addr["mailbox"], "--log-level", "warn")
	if err != nil {
		return err
	}
	brConn, err := healthy(ctx, addr["bridge"], bridgev1.BridgeService_ServiceDesc.ServiceName)
	if err != nil {
		return err
	}
	defer brConn.Close()
	gwProc, err := launch("gateway", bins["gateway"], "--dev", "--listen", addr["gateway"], "--registry", addr["registry"],
		"--mailbox", addr["mailbox"], "--bridge", addr["bridge"], "--log-level", "warn")
	if err != nil {
		return err
	}
	if err := httpHealthy(ctx, "http://"+addr["gateway"]); err != nil {
		return err
	}
	if _, err := launch("echo", self, "-serve-echo", addr["echo"]); err != nil {
		return err
	}
	echoConn, err := healthy(ctx, addr["echo"], "bench.Echo")
	if err != nil {
		return err
	}
	defer echoConn.Close()

	if _, err := launch("dev", bins["switchboard"], "dev", "--grpc", addr["dev"], "--http", addr["dev-http"], "--data", dir+"/dev-data", "--log-level", "warn"); err != nil {
		return err
	}
	devConn, err := healthy(ctx, addr["dev"], bridgev1.BridgeService_ServiceDesc.ServiceName)
	if err != nil {
		return err
	}
	defer devConn.Close()

	time.Sleep(time.Second) // let the services settle before reading idle RSS
	for _, p := range []*proc{regProc, mbProc, brProc, gwProc} {
		n, err := p.rss()
		if err != nil {
			return err
		}
		r.bytes("rss_idle_"+p.name+"_bytes", n)
	}

	s := &suite{reg: registryv1.NewRegistryServiceClient(regConn), mb: mailboxv1.NewMailboxServiceClient(mbConn),
		br: bridgev1.NewBridgeServiceClient(brConn)}
	embedded := &suite{reg: registryv1.NewRegistryServiceClient(devConn), mb: mailboxv1.NewMailboxServiceClient(devConn),
		br: bridgev1.NewBridgeServiceClient(devConn)}
	steps := []struct {
		name string
		run  func() error
	}{
		{"echo floor and mailbox round trip", func() error { return floorAndMailbox(ctx, r, s, echoConn) }},
		{"the gateway round trip", func() error { return gatewayRoundTrip(ctx, r, s, "http://"+addr["gateway"]) }},
		{"an MCP call, direct and through the suite", func() error {
			return mcpCall(ctx, r, embedded, s, everything)
		}},
		{"1,000 parked hosts", func() error { return parked(ctx, r, s) }},
		{"bytes per queued invocation", func() error { return queuedBytes(ctx, r, s) }},
	}
	for _, st := range steps {
		fmt.Fprintf(os.Stderr, "measuring %s…\n", st.name)
		if err := st.run(); err != nil {
			return fmt.Errorf("%s: %w", st.name, err)
		}
	}
	return nil
}
