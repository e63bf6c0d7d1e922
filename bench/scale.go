package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// scaleOut measures how far one machine goes (docs/scale.md): hosts parked
// on one mailbox replica, calls with every host parked against calls with
// one, and invocations queued for clients nobody reads — with NATS as
// processes of its own (`switchboard nats`), so that what each part holds
// is its own RSS. It runs on one NATS node (R1, hostsR1 hosts) and on a
// three-node cluster (R3, hostsR3 hosts).
func scaleOut(ctx context.Context, r *report, bins map[string]string, hostsR1, hostsR3, queued int) error {
	for _, run := range []struct{ nodes, hosts int }{{1, hostsR1}, {3, hostsR3}} {
		err := testkit.Session(func(t testkit.TB) error { return scaleOn(ctx, r, t, bins, run.nodes, run.hosts, queued) })
		if err != nil {
			return fmt.Errorf("on %d NATS node(s): %w", run.nodes, err)
		}
	}
	return nil
}

// scaleProcs are the processes whose memory the scale step reads.
type scaleProcs struct {
	nats              []*testkit.Proc
	registry, mailbox *testkit.Proc
}

// rss is what each part holds now: NATS summed over its nodes.
func (p scaleProcs) rss() (natsBytes, reg, mb int64, err error) {
	for i, n := range p.nats {
		b, err := rss(fmt.Sprintf("nats-%d", i+1), n)
		if err != nil {
			return 0, 0, 0, err
		}
		natsBytes += b
	}
	if reg, err = rss("registry", p.registry); err != nil {
		return 0, 0, 0, err
	}
	mb, err = rss("mailbox", p.mailbox)
	return natsBytes, reg, mb, err
}

func scaleOn(ctx context.Context, r *report, t testkit.TB, bins map[string]string, nodes, hosts, queued int) error {
	dir, err := os.MkdirTemp("", "switchboard-bench-scale-")
	if err != nil {
		return err
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	var p scaleProcs
	urls := natsNodes(t, bins["switchboard"], dir, nodes, &p)
	flags := []string{"--nats", strings.Join(urls, ","), "--nats-replicas", fmt.Sprint(nodes), "--log-level", "warn"}
	regAddr, mbAddr := testkit.FreeAddr(t), testkit.FreeAddr(t)
	p.registry = testkit.Start(t, bins["registry"], append([]string{"--dev", "--listen", regAddr}, flags...)...)
	reg := registryv1.NewRegistryServiceClient(healthy(t, regAddr, ""))
	p.mailbox = testkit.Start(t, bins["mailbox"], append([]string{"--dev", "--listen", mbAddr, "--registry", regAddr}, flags...)...)
	// Hosts read over connections of their own, a thousand streams each, as
	// many machines would; drivers call over one more.
	mbs := make([]mailboxv1.MailboxServiceClient, hosts/1000+1)
	for i := range mbs {
		mbs[i] = mailboxv1.NewMailboxServiceClient(healthy(t, mbAddr, mailboxv1.MailboxService_ServiceDesc.ServiceName))
	}
	drivers := mailboxv1.NewMailboxServiceClient(healthy(t, mbAddr, mailboxv1.MailboxService_ServiceDesc.ServiceName))
	key := func(s string) string { return fmt.Sprintf("scale_r%d_%s", nodes, s) }

	// One host first: the streams and buckets exist, so what follows is
	// what a host adds; and the calls to it are the floor of the calls
	// with every host parked.
	if err := parkHosts(ctx, reg, mbs, "scale-first", 1, 1); err != nil {
		return err
	}
	one := func(ctx context.Context) error { return call(ctx, drivers, "scale-first-0", smallInput) }
	lat1, err := sample(ctx, r.warm, r.samples, one)
	if err != nil {
		return fmt.Errorf("calls with one host parked: %w", err)
	}
	tp1, err := throughput(ctx, 64, r.window, one)
	if err != nil {
		return fmt.Errorf("calls with one host parked: %w", err)
	}
	n0, reg0, mb0, err := p.rss()
	if err != nil {
		return err
	}
	began := time.Now()
	if err := parkHosts(ctx, reg, mbs, "scale-host", hosts, 64); err != nil {
		return err
	}
	took := time.Since(began)
	n1, reg1, mb1, err := p.rss()
	if err != nil {
		return err
	}
	perHost := func(a, b int64) float64 { return float64((b - a) / int64(hosts)) }
	r.rate(key("hosts_parked_per_sec"), float64(hosts)/took.Seconds())
	r.plain(key("nats_bytes_per_parked_host"), perHost(n0, n1))
	r.plain(key("mailbox_bytes_per_parked_host"), perHost(mb0, mb1))
	r.plain(key("registry_bytes_per_parked_host"), perHost(reg0, reg1))
	all := perHost(n0+reg0+mb0, n1+reg1+mb1)
	r.plain(key("bytes_per_parked_host"), all)

	anyHost := func(ctx context.Context) error {
		return call(ctx, drivers, fmt.Sprintf("scale-host-%d", rand.IntN(hosts)), smallInput)
	}
	latN, err := sample(ctx, r.warm, r.samples, anyHost)
	if err != nil {
		return fmt.Errorf("calls with %d hosts parked: %w", hosts, err)
	}
	tpN, err := throughput(ctx, 64, r.window, anyHost)
	if err != nil {
		return fmt.Errorf("calls with %d hosts parked: %w", hosts, err)
	}
	// The first host again, every host parked: what the parked hosts cost
	// apart from calls spread over their streams and connections.
	tpSame, err := throughput(ctx, 64, r.window, one)
	if err != nil {
		return fmt.Errorf("calls to one host with %d parked: %w", hosts, err)
	}
	r.latency(key("call_1_parked"), lat1)
	r.latency(key(fmt.Sprintf("call_%d_parked", hosts)), latN)
	r.rate(key("round_trips_per_sec_64_over_1_parked"), tp1)
	r.rate(key(fmt.Sprintf("round_trips_per_sec_64_over_%d_parked", hosts)), tpN)
	r.rate(key(fmt.Sprintf("round_trips_per_sec_64_to_one_of_%d_parked", hosts)), tpSame)
	r.figure(key("round_trips_ratio_64_to_one"), tpSame/tp1)
	if nodes == 1 {
		r.check(key("bytes_per_parked_host"), all, 32<<10, true)
		r.ratio(key("call_p99_ratio"), latN.p99(), lat1.p99(), 2, true)
	} else {
		r.check(key("hosts_parked_per_sec"), float64(hosts)/took.Seconds(), 500, false)
		r.check(key("round_trips_ratio_64"), tpN/tp1, 0.8, false)
	}

	// Queued: 1 KiB inputs for 100 clients that advertise and never read.
	const unread = 100
	for i := range unread {
		if err := advertiseEcho(ctx, reg, fmt.Sprintf("scale-unread-%d", i)); err != nil {
			return err
		}
	}
	n2, _, mb2, err := p.rss()
	if err != nil {
		return err
	}
	input := `{"pad":"` + strings.Repeat("x", 1024-10) + `"}`
	began = time.Now()
	if err := each(queued, 16, func(i int) error {
		_, err := drivers.Invoke(identity.As(ctx, driver), &mailboxv1.InvokeRequest{Client: fmt.Sprintf("scale-unread-%d", i%unread), Tool: "echo", Input: input})
		return err
	}); err != nil {
		return fmt.Errorf("queueing: %w", err)
	}
	took = time.Since(began)
	n3, _, mb3, err := p.rss()
	if err != nil {
		return err
	}
	r.rate(key("invocations_queued_per_sec"), float64(queued)/took.Seconds())
	r.plain(key("nats_bytes_per_queued_1kib"), float64((n3-n2)/int64(queued)))
	r.plain(key("mailbox_bytes_per_queued_1kib"), float64((mb3-mb2)/int64(queued)))
	return nil
}

// natsNodes starts nodes `switchboard nats` processes (a cluster when more
// than one) and waits until each one's JetStream answers.
func natsNodes(t testkit.TB, bin, dir string, nodes int, p *scaleProcs) []string {
	t.Helper()
	var clients, routes []string
	for range nodes {
		clients, routes = append(clients, testkit.FreeAddr(t)), append(routes, testkit.FreeAddr(t))
	}
	var urls []string
	for i := range nodes {
		name := fmt.Sprintf("nats-%d", i+1)
		args := []string{"nats", "--dev", "--name", name, "--listen", clients[i], "--data", filepath.Join(dir, name), "--log-level", "warn"}
		if nodes > 1 {
			others := append(append([]string(nil), routes[:i]...), routes[i+1:]...)
			args = append(args, "--cluster", "bench-scale", "--cluster-listen", routes[i], "--routes", strings.Join(others, ","))
		}
		p.nats = append(p.nats, testkit.Start(t, bin, args...))
		urls = append(urls, "nats://"+clients[i])
	}
	for _, u := range urls {
		testkit.Eventually(t, u+"'s JetStream to answer", startupTimeout, func() bool {
			return exec.Command(bin, "health", "--nats", u).Run() == nil
		})
	}
	return urls
}

// parkHosts advertises and parks n answering hosts named prefix-i, workers
// at a time, host i reading over mbs[i/1000].
func parkHosts(ctx context.Context, reg registryv1.RegistryServiceClient, mbs []mailboxv1.MailboxServiceClient, prefix string, n, workers int) error {
	return each(n, workers, func(i int) error {
		c := fmt.Sprintf("%s-%d", prefix, i)
		if err := advertiseEcho(ctx, reg, c); err != nil {
			return fmt.Errorf("advertising %s: %w", c, err)
		}
		return follow(ctx, mbs[(i/1000)%len(mbs)], c, onServe)
	})
}

// each runs op(0) … op(n-1), workers at a time, and returns the first error.
func each(n, workers int, op func(i int) error) error {
	var g errgroup.Group
	g.SetLimit(workers)
	for i := range n {
		g.Go(func() error { return op(i) })
	}
	return g.Wait()
}
