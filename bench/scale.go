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
	"github.com/switchboard-run/switchboard/kit/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// scaleOut measures how far one machine goes (docs/scale.md): hosts parked
// on one mailbox replica, invocations queued for clients nobody reads, and
// round trips with every host parked — with NATS as processes of its own
// (`switchboard nats`), so that what each part holds is its own RSS. It
// runs on one NATS node (R1) and on a three-node cluster (R3), where every
// client's consumer is a Raft group of its own.
func scaleOut(ctx context.Context, r *report, bins map[string]string, hosts, queued int) error {
	for _, nodes := range []int{1, 3} {
		err := testkit.Session(func(t testkit.TB) error { return scaleOn(ctx, r, t, bins, nodes, hosts, queued) })
		if err != nil {
			return fmt.Errorf("on %d NATS node(s): %w", nodes, err)
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
	mb := mailboxv1.NewMailboxServiceClient(healthy(t, mbAddr, mailboxv1.MailboxService_ServiceDesc.ServiceName))
	key := func(s string) string { return fmt.Sprintf("scale_r%d_%s", nodes, s) }

	// One host first: the streams and buckets exist, so what follows is
	// what a host adds.
	if err := parkHosts(ctx, reg, mb, "scale-first", 1, 1); err != nil {
		return err
	}
	n0, reg0, mb0, err := p.rss()
	if err != nil {
		return err
	}
	began := time.Now()
	if err := parkHosts(ctx, reg, mb, "scale-host", hosts, 16); err != nil {
		return err
	}
	took := time.Since(began)
	n1, reg1, mb1, err := p.rss()
	if err != nil {
		return err
	}
	r.rate(key("hosts_parked_per_sec"), float64(hosts)/took.Seconds())
	r.plain(key("nats_bytes_per_parked_host"), float64((n1-n0)/int64(hosts)))
	r.plain(key("mailbox_bytes_per_parked_host"), float64((mb1-mb0)/int64(hosts)))
	r.plain(key("registry_bytes_per_parked_host"), float64((reg1-reg0)/int64(hosts)))

	tp, err := throughput(ctx, 64, r.window, func(ctx context.Context) error {
		return call(ctx, mb, fmt.Sprintf("scale-host-%d", rand.IntN(hosts)), smallInput)
	})
	if err != nil {
		return fmt.Errorf("calls with %d hosts parked: %w", hosts, err)
	}
	r.rate(key(fmt.Sprintf("round_trips_per_sec_64_over_%d_parked", hosts)), tp)

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
		_, err := mb.Invoke(identity.As(ctx, driver), &mailboxv1.InvokeRequest{Client: fmt.Sprintf("scale-unread-%d", i%unread), Tool: "echo", Input: input})
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
// at a time.
func parkHosts(ctx context.Context, reg registryv1.RegistryServiceClient, mb mailboxv1.MailboxServiceClient, prefix string, n, workers int) error {
	return each(n, workers, func(i int) error {
		c := fmt.Sprintf("%s-%d", prefix, i)
		if err := advertiseEcho(ctx, reg, c); err != nil {
			return fmt.Errorf("advertising %s: %w", c, err)
		}
		return follow(ctx, mb, c, onServe)
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
