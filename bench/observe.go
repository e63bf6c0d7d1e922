package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
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

// observability measures what metrics and traces cost (docs/observability.md):
// the mailbox round trip and an MCP call through the embedded suite in each
// mode, the same run, against the suite with no call counted.
func observability(ctx context.Context, r *report, t testkit.TB, bin, dir, server string) error {
	sink, spans, err := otlpSink(t)
	if err != nil {
		return err
	}
	rt := map[string]*latency{}
	tp := map[string]float64{}
	mcpLat := map[string]*latency{}
	for _, m := range observeModes {
		grpcAddr, httpAddr := testkit.FreeAddr(t), testkit.FreeAddr(t)
		var env []string
		if m.trace {
			env = []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + sink, "OTEL_TRACES_SAMPLER=always_on"}
		}
		args := append([]string{"dev", "--grpc", grpcAddr, "--http", httpAddr, "--data", filepath.Join(dir, "observe-"+m.name), "--log-level", "warn"}, m.flags...)
		p := testkit.StartEnv(t, env, bin, args...)
		conn := healthy(t, grpcAddr, bridgev1.BridgeService_ServiceDesc.ServiceName)
		s := &suite{reg: registryv1.NewRegistryServiceClient(conn), mb: mailboxv1.NewMailboxServiceClient(conn), br: bridgev1.NewBridgeServiceClient(conn)}
		if err := advertiseEcho(ctx, s.reg, "observe-host"); err != nil {
			return err
		}
		if err := follow(ctx, s.mb, "observe-host", true); err != nil {
			return err
		}
		callEcho := func(ctx context.Context) error { return call(ctx, s.mb, "observe-host", smallInput) }
		if rt[m.name], err = sample(ctx, r.warm, r.samples, callEcho); err != nil {
			return fmt.Errorf("%s: round trip: %w", m.name, err)
		}
		if tp[m.name], err = throughput(ctx, 64, r.window, callEcho); err != nil {
			return fmt.Errorf("%s: throughput: %w", m.name, err)
		}
		if mcpLat[m.name], err = throughSuite(ctx, r, s, server); err != nil {
			return fmt.Errorf("%s: MCP call: %w", m.name, err)
		}
		r.latency("observe_"+m.name+"_round_trip", rt[m.name])
		r.rate("observe_"+m.name+"_round_trips_per_sec_64", tp[m.name])
		r.latency("observe_"+m.name+"_mcp", mcpLat[m.name])
		if err := p.Stop(10 * time.Second); err != nil {
			return fmt.Errorf("stopping the %s suite: %w", m.name, err)
		}
		conn.Close()
	}
	if spans.Load() == 0 {
		return fmt.Errorf("the traced suite sent the OTLP sink nothing")
	}
	r.ratio("observe_metrics_p50_ratio", rt["metrics"].p50(), rt["off"].p50(), 1.05, true)
	r.ratio("observe_metrics_mcp_p50_ratio", mcpLat["metrics"].p50(), mcpLat["off"].p50(), 1.05, true)
	r.check("observe_metrics_throughput_ratio_64", tp["metrics"]/tp["off"], 0.95, false)
	r.plain("observe_traced_p50_ratio", float64(rt["traced"].p50())/float64(rt["off"].p50()))
	r.plain("observe_traced_mcp_p50_ratio", float64(mcpLat["traced"].p50())/float64(mcpLat["off"].p50()))
	r.plain("observe_traced_throughput_ratio_64", tp["traced"]/tp["off"])
	return nil
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
