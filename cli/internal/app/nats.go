package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/switchboard-run/switchboard/kit/lib/listen"
	"github.com/switchboard-run/switchboard/kit/suite/envflag"
	"github.com/switchboard-run/switchboard/kit/suite/natsserver"
	"github.com/switchboard-run/switchboard/kit/suite/natsusers"
	"github.com/switchboard-run/switchboard/kit/suite/process"
)

// runNATS: switchboard nats --listen A --data DIR [--name N --cluster C
// --cluster-listen A --routes A,B] [--tls-*]. A NATS server with JetStream
// for deployments that have none of their own (the compose files): the
// nats-server module itself, in the switchboard binary, so every image and
// machine that has the suite has the server it keeps its state in. With
// TLS it admits the suite's services only, each with its own subjects
// (kit/suite/natsusers).
func runNATS(ctx context.Context, args []string, std IO) int {
	fs := envflag.NewFlagSet("nats", std.Stderr)
	addr := fs.String("listen", "127.0.0.1:4222", "client address")
	data := fs.String("data", "", "directory of JetStream's storage (required)")
	name := fs.String("name", "", "the server's name (required in a cluster: unique per node)")
	cluster := fs.String("cluster", "", "the cluster's name, the same on every node (empty: one node)")
	clusterListen := fs.String("cluster-listen", "0.0.0.0:6222", "route address, in a cluster")
	routes := fs.String("routes", "", "comma-separated route addresses of the other nodes (host:6222)")
	advertise := fs.String("cluster-advertise", "", "the route address the other nodes dial this one at (host:6222; empty: its IP), in a cluster")
	healthAddr := fs.String("health-addr", "", "serve GET /healthz on this loopback address (e.g. 127.0.0.1:8222): 200 once JetStream serves and every stream this node holds is current; for `switchboard health --http`")
	printAuth := fs.Bool("print-authorization", false, "print the suite's NATS users (an authorization block for a nats-server of your own, beside tls { verify_and_map: true }) and exit")
	var sec process.Security
	sec.Register(fs)
	var lf process.Log
	lf.Register(fs)
	if _, err := parse(fs, args); err != nil {
		return fail(std, "nats", err)
	}
	if *printAuth {
		fmt.Fprint(std.Stdout, natsusers.Authorization())
		return 0
	}
	if *data == "" {
		return fail(std, "nats", usagef("--data is required: the directory JetStream keeps the suite's state in"))
	}
	log, err := lf.Logger(std.Stderr)
	if err != nil {
		return fail(std, "nats", err)
	}
	o := natsserver.Options{Dir: *data, Listen: *addr, Name: *name, Log: log}
	if *cluster != "" {
		o.Cluster = &natsserver.Cluster{Name: *cluster, Listen: *clusterListen, Routes: envflag.List(*routes), Advertise: *advertise}
	}
	if err := sec.Check(); err != nil {
		return fail(std, "nats", err)
	}
	if *healthAddr != "" {
		if err := listen.CheckLoopback(*healthAddr); err != nil {
			return fail(std, "nats", fmt.Errorf("--health-addr: %w", err))
		}
	}
	if sec.Dev {
		if err := listen.CheckLoopback(*addr); err != nil {
			return fail(std, "nats", err)
		}
	} else if o.TLS, err = natsserver.TLS(sec.Files); err != nil {
		return fail(std, "nats", err)
	}
	s, err := natsserver.Start(o)
	if err != nil {
		return fail(std, "nats", err)
	}
	defer s.Shutdown()
	if *healthAddr != "" {
		stop, err := serveHealth(*healthAddr, s, log)
		if err != nil {
			return fail(std, "nats", err)
		}
		defer stop()
	}
	log.Info("nats listening", "addr", *addr, "data", *data, "cluster", *cluster, "tls", o.TLS != nil, "health", *healthAddr)
	<-ctx.Done()
	return 0
}

// serveHealth answers GET /healthz with the node's Health: the container's
// healthcheck asks it, so a node restarted into a cluster is healthy only
// once its streams have caught up, not when it first takes connections.
func serveHealth(addr string, s *natsserver.Server, log *slog.Logger) (stop func(), err error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--health-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := s.Health(); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, err)
			return
		}
		fmt.Fprintln(w, "SERVING")
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, MaxHeaderBytes: 8 << 10}
	go func() {
		if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("serving /healthz stopped", "err", err)
		}
	}()
	return func() { _ = srv.Close() }, nil
}
