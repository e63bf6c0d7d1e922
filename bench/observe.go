package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// observeModes are the embedded suite's telemetry settings the bench
// compares: nothing counted per call (the floor), the default (metrics on,
// tracing off), and every call traced at sampling 1.0 to an OTLP sink.
var observeModes = []struct {
	name  string
	flags []string
	trace bool
}{
	{name: "off", flags: []string{"--call-metrics=false"}},
	{name: "metrics"},
	{name: "traced", trace: true},
}

// observeRounds is how many times the modes take turns: load from
// elsewhere on the machine then weighs on each mode alike.
const observeRounds = 4

// observability measures what metrics and traces cost (docs/observability.md):
// the mailbox round trip, its throughput and an MCP call through the
// embedded suite in each mode, all three suites up at once and measured in
// turns, against the suite with no call counted.
func observability(ctx context.Context, r *report, t testkit.TB, bin, dir, server string) error {
	sink, exports, err := otlpSink(t)
	if err != nil {
		return err
	}
	type mode struct {
		echo, mcp  func(context.Context) error
		rt, mcpLat latency
		perSec     []float64
	}
	modes := map[string]*mode{}
	for _, m := range observeModes {
		grpcAddr, httpAddr := testkit.FreeAddr(t), testkit.FreeAddr(t)
		var env []string
		if m.trace {
			env = []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + sink, "OTEL_TRACES_SAMPLER=always_on"}
		}
		args := append([]string{"dev", "--grpc", grpcAddr, "--http", httpAddr, "--data", filepath.Join(dir, "observe-"+m.name), "--log-level", "warn"}, m.flags...)
		testkit.StartEnv(t, env, bin, args...)
		conn, _ := healthyDev(t, grpcAddr, bridgev1.BridgeService_ServiceDesc.ServiceName, filepath.Join(dir, "observe-"+m.name))
		s := &suite{reg: registryv1.NewRegistryServiceClient(conn), mb: mailboxv1.NewMailboxServiceClient(conn), br: bridgev1.NewBridgeServiceClient(conn)}
		if err := advertiseEcho(ctx, s.reg, "observe-host"); err != nil {
			return err
		}
		if err := follow(ctx, s.mb, "observe-host", onServe); err != nil {
			return err
		}
		mcpCall, err := mountConformance(ctx, s, server)
		if err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
		modes[m.name] = &mode{echo: func(ctx context.Context) error { return call(ctx, s.mb, "observe-host", smallInput) }, mcp: mcpCall}
	}
	n := max(r.samples/observeRounds, 1)
	for round := range observeRounds {
		for _, m := range observeModes {
			md := modes[m.name]
			warm := 0
			if round == 0 {
				warm = r.warm
			}
			rt, err := sample(ctx, warm, n, md.echo)
			if err != nil {
				return fmt.Errorf("%s: round trip: %w", m.name, err)
			}
			ml, err := sample(ctx, warm, n/2, md.mcp)
			if err != nil {
				return fmt.Errorf("%s: MCP call: %w", m.name, err)
			}
			tp, err := throughput(ctx, 64, r.window/observeRounds, md.echo)
			if err != nil {
				return fmt.Errorf("%s: throughput: %w", m.name, err)
			}
			md.rt.samples = append(md.rt.samples, rt.samples...)
			md.mcpLat.samples = append(md.mcpLat.samples, ml.samples...)
			md.perSec = append(md.perSec, tp)
		}
	}
	if exports.Load() == 0 {
		return fmt.Errorf("the traced suite sent the OTLP sink nothing")
	}
	tp := map[string]float64{}
	for _, m := range observeModes {
		md := modes[m.name]
		tp[m.name] = median(md.perSec)
		r.latency("observe_"+m.name+"_round_trip", &md.rt)
		r.rate("observe_"+m.name+"_round_trips_per_sec_64", tp[m.name])
		r.latency("observe_"+m.name+"_mcp", &md.mcpLat)
	}
	off, on, traced := modes["off"], modes["metrics"], modes["traced"]
	r.ratio("observe_metrics_p50_ratio", on.rt.p50(), off.rt.p50(), 1.05, true)
	r.ratio("observe_metrics_mcp_p50_ratio", on.mcpLat.p50(), off.mcpLat.p50(), 1.05, true)
	r.check("observe_metrics_throughput_ratio_64", tp["metrics"]/tp["off"], 0.95, false)
	r.figure("observe_traced_p50_ratio", float64(traced.rt.p50())/float64(off.rt.p50()))
	r.figure("observe_traced_mcp_p50_ratio", float64(traced.mcpLat.p50())/float64(off.mcpLat.p50()))
	r.figure("observe_traced_throughput_ratio_64", tp["traced"]/tp["off"])
	return nil
}

// median is the middle of xs (the mean of the two middles of an even count).
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// otlpSink is an OTLP/HTTP trace receiver that takes every export and
// keeps nothing but a count of the requests: the collector's side of the
// cost stays out of the suite's figures.
func otlpSink(t testkit.TB) (string, *atomic.Int64, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	var n atomic.Int64
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		n.Add(1)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK) // an empty ExportTraceServiceResponse
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(func() { srv.Close() })
	return "http://" + lis.Addr().String(), &n, nil
}
