package main

import (
	"errors"

	"context"
	"fmt"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"math/rand/v2"
	"runtime"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/wrapperspb"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/lib/logging"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/mailbox"
)

const smallInput = `{"n":1}`

// floor is the echo floor as measured: the figures the other steps
// compare against.
type floor struct {
	latency *latency
	perSec  map[int]float64 // by concurrency
}

// floorAndMailbox measures the echo floor and the split deployment's
// mailbox round trip (a driver's Call ↔ a host on a Follow stream, the
// JetStream store on a NATS of its own) at the same concurrency.
func floorAndMailbox(ctx context.Context, r *report, s *suite, echoConn *grpc.ClientConn, f *floor) error {
	msg := wrapperspb.String(smallInput)
	echoCtx := identity.As(ctx, driver)
	echoLat, err := sample(echoCtx, r.warm, r.samples, func(ctx context.Context) error { return echo(ctx, echoConn, msg) })
	if err != nil {
		return fmt.Errorf("echo: %w", err)
	}
	r.latency("echo", echoLat)
	f.latency, f.perSec = echoLat, map[int]float64{}

	if err := advertiseEcho(ctx, s.reg, "bench-host"); err != nil {
		return err
	}
	if err := follow(ctx, s.mb, "bench-host", onServe); err != nil {
		return err
	}
	rt, err := sample(ctx, r.warm, r.samples, func(ctx context.Context) error { return call(ctx, s.mb, "bench-host", smallInput) })
	if err != nil {
		return fmt.Errorf("mailbox round trip: %w", err)
	}
	r.latency("mailbox_round_trip", rt)
	r.ratio("mailbox_p50_ratio", rt.p50(), echoLat.p50(), 3, true)

	for _, n := range []int{1, 16, 64, 256} {
		echoTP, err := throughput(echoCtx, n, r.window, func(ctx context.Context) error { return echo(ctx, echoConn, msg) })
		if err != nil {
			return fmt.Errorf("echo throughput: %w", err)
		}
		rtTP, err := throughput(ctx, n, r.window, func(ctx context.Context) error { return call(ctx, s.mb, "bench-host", smallInput) })
		if err != nil {
			return fmt.Errorf("mailbox throughput at %d: %w", n, err)
		}
		r.rate(fmt.Sprintf("echo_per_sec_%d", n), echoTP)
		f.perSec[n] = echoTP
		r.rate(fmt.Sprintf("mailbox_round_trips_per_sec_%d", n), rtTP)
		key := fmt.Sprintf("mailbox_throughput_ratio_%d", n)
		if n == 64 {
			r.check(key, rtTP/echoTP, 0.2, false)
		} else {
			r.plain(key, rtTP/echoTP)
		}
	}
	return nil
}

// parked measures Invoke's p99 with 1,000 hosts parked on Follow streams
// against the same with one.
func parked(ctx context.Context, r *report, s *suite) error {
	measure := func(clients []string) (*latency, error) {
		driverCtx := identity.As(ctx, driver)
		return sample(driverCtx, r.warm, r.samples, func(ctx context.Context) error {
			_, err := s.mb.Invoke(ctx, &mailboxv1.InvokeRequest{Client: clients[rand.IntN(len(clients))], Tool: "echo", Input: smallInput})
			return err
		})
	}
	one := []string{"parked-0"}
	many := make([]string, 1000)
	for i := range many {
		many[i] = fmt.Sprintf("parked-%d", i)
		if err := advertiseEcho(ctx, s.reg, many[i]); err != nil {
			return err
		}
	}
	if err := follow(ctx, s.mb, one[0], parkedHost); err != nil {
		return err
	}
	single, err := measure(one)
	if err != nil {
		return fmt.Errorf("invoke with one parked host: %w", err)
	}
	for _, c := range many[1:] {
		if err := follow(ctx, s.mb, c, parkedHost); err != nil {
			return err
		}
	}
	thousand, err := measure(many)
	if err != nil {
		return fmt.Errorf("invoke with 1,000 parked hosts: %w", err)
	}
	r.latency("invoke_1_parked", single)
	r.latency("invoke_1000_parked", thousand)
	r.ratio("parked_1000_p99_ratio", thousand.p99(), single.p99(), 2, true)
	return nil
}

// queuedBytes measures what one durable invocation of 1 KiB input costs
// beyond the input itself: 100,000 Invokes through the service's own
// handler, for clients that are not reading, on a NATS server of the
// bench's own, as the bytes NATS keeps for them.
func queuedBytes(ctx context.Context, r *report, s *suite) error {
	const n, clients = 100_000, 20
	names := make([]string, clients)
	for i := range names {
		names[i] = fmt.Sprintf("queued-%d", i)
		if err := advertiseEcho(ctx, s.reg, names[i]); err != nil {
			return err
		}
	}
	input := `{"pad":"` + strings.Repeat("x", 1024-10) + `"}`
	return testkit.Session(func(t testkit.TB) error {
		ns := testkit.NATS(t)
		nc, err := nats.Connect("", ns.InProcess())
		if err != nil {
			return err
		}
		defer nc.Close()
		cfg := mailbox.Config{Bounds: mailbox.Bounds{TTL: time.Hour, MaxQueued: n, MaxSlots: 2 * n, MaxCaptureBytes: 1 << 20,
			MaxPosterBytes: 1 << 30, MaxClientBytes: 1 << 30}} // one poster queues 100 MiB
		svc, err := mailbox.New(ctx, cfg, nc, s.reg, identity.Self{Dev: true, Identity: identity.Identity{Name: "bench-mailbox", Grade: identity.Service}}, logging.Discard())
		if err != nil {
			return err
		}
		// Called in process, past the authentication that gives a dev-mode
		// driver every workspace: give it that here.
		all := identity.AllWorkspaces()
		dev := driver
		dev.Workspaces = &all
		dctx := identity.NewContext(ctx, dev)
		svcCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		svc.Start(svcCtx)
		<-svc.Synced()
		before, err := stored(ctx, nc)
		if err != nil {
			return err
		}
		for i := range n {
			req := &mailboxv1.InvokeRequest{Client: names[i%clients], Tool: "echo", Input: strings.Clone(input)}
			if _, err := svc.Invoke(dctx, req); err != nil {
				return fmt.Errorf("queueing invocation %d: %w", i, err)
			}
		}
		after, err := stored(ctx, nc)
		if err != nil {
			return err
		}
		per := float64(after-before)/n - float64(len(input))
		r.check("bytes_per_queued_invocation_nats", per, 2048, true)
		runtime.KeepAlive(svc)
		return nil
	})
}

// stored is the bytes NATS keeps for the durable invocations.
func stored(ctx context.Context, nc *nats.Conn) (uint64, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return 0, err
	}
	var total uint64
	for _, name := range mailbox.DurableStreams() {
		st, err := js.Stream(ctx, name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			continue
		}
		if err != nil {
			return 0, err
		}
		info, err := st.Info(ctx)
		if err != nil {
			return 0, err
		}
		total += info.State.Bytes
	}
	return total, nil
}

func heap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// suite is a deployment the bench measures: the split one (a process per
// service) or the embedded one (`switchboard dev`).
type suite struct {
	reg registryv1.RegistryServiceClient
	mb  mailboxv1.MailboxServiceClient
	br  bridgev1.BridgeServiceClient
}
