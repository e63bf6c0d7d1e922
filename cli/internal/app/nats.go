package app

import (
	"context"
	"fmt"

	"github.com/switchboard-run/switchboard/kit/envflag"
	"github.com/switchboard-run/switchboard/kit/listen"
	"github.com/switchboard-run/switchboard/kit/natsserver"
	"github.com/switchboard-run/switchboard/kit/natsusers"
	"github.com/switchboard-run/switchboard/kit/process"
)

// runNATS: switchboard nats --listen A --data DIR [--name N --cluster C
// --cluster-listen A --routes A,B] [--tls-*]. A NATS server with JetStream
// for deployments that have none of their own (the compose files): the
// nats-server module itself, in the switchboard binary, so every image and
// machine that has the suite has the server it keeps its state in. With
// TLS it admits the suite's services only, each with its own subjects
// (kit/natsusers).
func runNATS(ctx context.Context, args []string, std IO) int {
	fs := envflag.NewFlagSet("nats", std.Stderr)
	addr := fs.String("listen", "127.0.0.1:4222", "client address")
	data := fs.String("data", "", "directory of JetStream's storage (required)")
	name := fs.String("name", "", "the server's name (required in a cluster: unique per node)")
	cluster := fs.String("cluster", "", "the cluster's name, the same on every node (empty: one node)")
	clusterListen := fs.String("cluster-listen", "0.0.0.0:6222", "route address, in a cluster")
	routes := fs.String("routes", "", "comma-separated route addresses of the other nodes (host:6222)")
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
		o.Cluster = &natsserver.Cluster{Name: *cluster, Listen: *clusterListen, Routes: envflag.List(*routes)}
	}
	if err := sec.Check(); err != nil {
		return fail(std, "nats", err)
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
	log.Info("nats listening", "addr", *addr, "data", *data, "cluster", *cluster, "tls", o.TLS != nil)
	<-ctx.Done()
	s.Shutdown()
	return 0
}
