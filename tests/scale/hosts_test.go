package scale

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"
	"google.golang.org/protobuf/proto"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/lib/logging"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
	"github.com/switchboard-run/switchboard/kit/suite/follower"
	"github.com/switchboard-run/switchboard/kit/suite/grpcclient"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/tests/internal/procs"
)

// echo answers every invocation with its input: a host that costs nothing
// to run, so the test measures the suite.
type echo struct{}

func (echo) Run(_ context.Context, inv *mailboxv1.Invocation) *mailboxv1.Capture {
	return capture.New(inv.GetInput(), "", 0)
}

// hosts are n tool hosts in this process, each the kit's follower as
// `switchboard host` runs it (advertise before every Follow, redial with
// the suite's backoff), sharing a few connections that each list both
// mailbox replicas: grpc-go's round robin spreads the Follows over them,
// and a Follow broken by a dead replica lands on the live one.
type hosts struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// hostsPerConn is how many hosts share one connection: real hosts have one
// each, but a thousand of them in one test process would hold thousands of
// sockets for nothing the test looks at.
const hostsPerConn = 100

// startHosts starts a host for each of clients, advertising to reg and
// following the mailbox replicas listed in mailboxes ("A,B"); they stop
// when the test ends.
func startHosts(t *testing.T, clients []string, reg registryv1.RegistryServiceClient, mailboxes string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h := &hosts{cancel: cancel}
	var conns []*grpc.ClientConn
	for range (len(clients) + hostsPerConn - 1) / hostsPerConn {
		cc, err := grpcclient.Dial(mailboxes, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cc.Close() })
		readyOnAll(t, cc, strings.Split(mailboxes, ","))
		conns = append(conns, cc)
	}
	t.Cleanup(h.stop) // before the connections close
	for i, client := range clients {
		session := "scale-" + client
		as := func(ctx context.Context) context.Context {
			return identity.As(ctx, identity.Identity{Name: client, Grade: identity.Host})
		}
		f := follower.New(follower.Options{
			Mailbox: mailboxv1.NewMailboxServiceClient(conns[i/hostsPerConn]),
			Session: session,
			As:      as,
			Advertise: func(ctx context.Context) error {
				_, err := reg.Advertise(as(ctx), &registryv1.AdvertiseRequest{Session: proto.String(session),
					Tools: []*registryv1.Tool{{Name: "echo", Description: "answers its input", InputSchema: `{"type":"object"}`}}})
				return err
			},
			Log: logging.Discard(),
		})
		h.wg.Go(func() { _ = f.Run(ctx, echo{}) })
	}
}

// readyOnAll waits until cc has answered from every one of addrs: round
// robin then alternates between them, so the hosts' Follows spread evenly
// instead of all going to whichever replica connected first.
func readyOnAll(t *testing.T, cc *grpc.ClientConn, addrs []string) {
	t.Helper()
	seen := map[string]bool{}
	health := healthpb.NewHealthClient(cc)
	testkit.Eventually(t, fmt.Sprintf("a connection to answer from each of %v", addrs), 20*time.Second, func() bool {
		var p peer.Peer
		if _, err := health.Check(context.Background(), &healthpb.HealthCheckRequest{}, grpc.Peer(&p)); err == nil && p.Addr != nil {
			seen[p.Addr.String()] = true
		}
		return len(seen) == len(addrs)
	})
}

// stop ends every host and waits for them.
func (h *hosts) stop() {
	h.cancel()
	h.wg.Wait()
}

// calls is what callEach saw: how long each answered call took, and the
// refusals.
type calls struct {
	took    []time.Duration
	refused []error
}

// summary is the calls' count, p50, p99 and slowest.
func (c calls) summary() string {
	if len(c.took) == 0 {
		return fmt.Sprintf("none answered, %d refused", len(c.refused))
	}
	s := slices.Clone(c.took)
	slices.Sort(s)
	q := func(f float64) time.Duration { return s[min(int(f*float64(len(s))), len(s)-1)].Round(time.Millisecond) }
	return fmt.Sprintf("%d answered (p50 %v, p99 %v, slowest %v), %d refused", len(s), q(0.5), q(0.99), q(1), len(c.refused))
}

// callEach calls echo once on every client through mb, workers at a time.
func callEach(mb mailboxv1.MailboxServiceClient, clients []string, workers int) calls {
	var (
		mu  sync.Mutex
		out calls
		g   errgroup.Group
	)
	g.SetLimit(workers)
	for _, c := range clients {
		g.Go(func() error {
			input := fmt.Sprintf(`{"to":%q}`, c)
			ctx, cancel := context.WithTimeout(procs.Driver(), 30*time.Second)
			defer cancel()
			began := time.Now()
			res, err := mb.Call(ctx, &mailboxv1.CallRequest{Client: c, Tool: "echo", Input: input})
			took := time.Since(began)
			if err == nil && res.GetCapture().GetStdout() != input {
				err = fmt.Errorf("the call to %s was answered %v, not its own input", c, res.GetCapture())
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				out.refused = append(out.refused, fmt.Errorf("calling %s: %w", c, err))
			} else {
				out.took = append(out.took, took)
			}
			return nil
		})
	}
	_ = g.Wait() // every call's outcome is in out
	return out
}
