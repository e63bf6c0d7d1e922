package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/natsserver"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// stores measures the mailbox round trip of the embedded suite
// (`switchboard dev`, its own process, its NATS in process) against the
// echo floor measured in the same run: a Call, which writes nothing
// durable, and a durable Invoke then a waiting Capture. It is measured a
// second time, in a fresh suite, with a host that answers with a unary
// Complete each, as hosts did before Serve: what answering on the read's
// stream buys, in one run.
func stores(ctx context.Context, r *report, t testkit.TB, bin, dir string, echo *latency, echoTP64 float64) error {
	var serve *latency
	var serveTP float64
	for _, run := range []struct {
		name, store string
		how         answering
	}{{"nats", "nats", onServe}, {"nats_unary_complete", "nats", withComplete}} {
		grpcAddr, httpAddr, debugAddr := testkit.FreeAddr(t), testkit.FreeAddr(t), testkit.FreeAddr(t)
		p := testkit.Start(t, bin, "dev", "--grpc", grpcAddr, "--http", httpAddr, "--data", filepath.Join(dir, "store-"+run.name),
			"--debug-addr", debugAddr, "--log-level", "warn")
		conn, _ := healthyDev(t, grpcAddr, mailboxv1.MailboxService_ServiceDesc.ServiceName, filepath.Join(dir, "store-"+run.name))
		s := &suite{reg: registryv1.NewRegistryServiceClient(conn), mb: mailboxv1.NewMailboxServiceClient(conn)}
		if err := advertiseEcho(ctx, s.reg, "store-host"); err != nil {
			return err
		}
		if err := follow(ctx, s.mb, "store-host", run.how); err != nil {
			return err
		}
		do := func(ctx context.Context) error { return call(ctx, s.mb, "store-host", smallInput) }
		rt, err := sample(ctx, r.warm, r.samples, do)
		if err != nil {
			return fmt.Errorf("the %s store's round trip: %w", run.name, err)
		}
		r.latency("embedded_"+run.name+"_round_trip", rt)
		tp, err := throughput(ctx, 64, r.window, do)
		if err != nil {
			return fmt.Errorf("the %s store's throughput: %w", run.name, err)
		}
		r.rate("embedded_"+run.name+"_round_trips_per_sec_64", tp)
		switch run.name {
		case "nats": // the targets
			serve, serveTP = rt, tp
			r.ratio("embedded_nats_p50_ratio", rt.p50(), echo.p50(), 2.5, true)
			r.check("embedded_nats_throughput_ratio_64", tp/echoTP64, 0.4, false)
			durable, err := sample(ctx, r.warm, r.samples, func(ctx context.Context) error { return invokeCapture(ctx, s.mb, "store-host", smallInput) })
			if err != nil {
				return fmt.Errorf("a durable invoke and its capture: %w", err)
			}
			r.latency("embedded_invoke_capture_round_trip", durable)
			r.ratio("embedded_invoke_capture_over_call_p50", durable.p50(), rt.p50(), 1.6, true)
			if r.profile != "" {
				err := profileUnderLoad(ctx, debugAddr, r.profile, "store-", 64, func(ctx context.Context, _ int) error { return do(ctx) })
				if err != nil {
					return err
				}
			}
		case "nats_unary_complete": // no target: what Serve buys
			r.figure("embedded_nats_serve_over_unary_p50", float64(serve.p50())/float64(rt.p50()))
			r.figure("embedded_nats_serve_over_unary_throughput_64", serveTP/tp)
		}
		if err := p.Stop(10 * time.Second); err != nil {
			return fmt.Errorf("stopping the %s suite: %w", run.name, err)
		}
		conn.Close()
	}
	return nil
}

// replicas measures what a second mailbox replica adds: 64 drivers calling
// through one mailbox replica, then spread over two, each on a three-node
// NATS cluster (R3) with one registry, and hosts answering on both.
func replicas(ctx context.Context, r *report, t testkit.TB, bins map[string]string) error {
	dir, err := os.MkdirTemp("", "switchboard-bench-cluster-")
	if err != nil {
		return err
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	nodes, err := natsserver.StartCluster(dir, "bench", 3, nil)
	if err != nil {
		return err
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			n.Shutdown()
		}
	})
	urls := make([]string, len(nodes))
	for i, n := range nodes {
		urls[i] = n.ClientURL()
	}
	natsFlags := []string{"--nats", strings.Join(urls, ","), "--nats-replicas", "3", "--log-level", "warn"}
	regAddr := testkit.FreeAddr(t)
	testkit.Start(t, bins["registry"], append([]string{"--dev", "--listen", regAddr}, natsFlags...)...)
	regConn := healthy(t, regAddr, "")
	reg := registryv1.NewRegistryServiceClient(regConn)
	var mbs []mailboxv1.MailboxServiceClient
	for range 2 {
		addr := testkit.FreeAddr(t)
		testkit.Start(t, bins["mailbox"], append([]string{"--dev", "--listen", addr, "--registry", regAddr}, natsFlags...)...)
		mbs = append(mbs, mailboxv1.NewMailboxServiceClient(healthy(t, addr, mailboxv1.MailboxService_ServiceDesc.ServiceName)))
	}
	// Eight hosts, four reading on each replica.
	const hosts = 8
	for i := range hosts {
		client := fmt.Sprintf("replica-host-%d", i)
		if err := advertiseEcho(ctx, reg, client); err != nil {
			return err
		}
		if err := follow(ctx, mbs[i%2], client, onServe); err != nil {
			return err
		}
	}
	run := func(spread uint64) (float64, error) {
		var next atomic.Uint64
		return throughput(ctx, 64, r.window, func(ctx context.Context) error {
			n := next.Add(1)
			return call(ctx, mbs[n%spread], fmt.Sprintf("replica-host-%d", n%hosts), smallInput)
		})
	}
	one, err := run(1)
	if err != nil {
		return fmt.Errorf("one replica: %w", err)
	}
	two, err := run(2)
	if err != nil {
		return fmt.Errorf("two replicas: %w", err)
	}
	r.rate("cluster_one_replica_per_sec_64", one)
	r.rate("cluster_two_replicas_per_sec_64", two)
	r.check("cluster_replica_scaling_64", two/one, 1.3, false)
	return nil
}
