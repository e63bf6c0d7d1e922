package natsserver

import (
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Two nodes whose route runs through a link that is then cut — it drops
// every byte both ways, as a network disconnected under a container does,
// rather than closing — give each other up within 30 s (4 × 5 s pings;
// the server's own setting takes 60–90 s), so neither routes messages to
// the other's clients for longer.
func TestANodeCutOffTheNetworkIsGivenUpOnWithinThirtySeconds(t *testing.T) {
	addrs, err := freeAddrs(2)
	if err != nil {
		t.Fatal(err)
	}
	linkA, linkB := newLink(t, addrs[0]), newLink(t, addrs[1])
	var a, b *Server
	var wg sync.WaitGroup // each node's JetStream waits for the other
	wg.Go(func() { a = startNode(t, "a", addrs[0], linkB.Addr()) })
	wg.Go(func() { b = startNode(t, "b", addrs[1], linkA.Addr()) })
	wg.Wait()
	if a == nil || b == nil {
		t.FailNow()
	}
	waitRoutes(t, "the route between a and b", 30*time.Second, a, b, func(n int) bool { return n > 0 })

	cut := time.Now()
	linkA.cut.Store(true)
	linkB.cut.Store(true)
	waitRoutes(t, "a and b giving each other up", 30*time.Second, a, b, func(n int) bool { return n == 0 })
	t.Logf("a and b gave each other up %v after the cut", time.Since(cut).Round(100*time.Millisecond))
}

// startNode starts node name listening for routes at addr (its peer
// reaches it through a link) with a route to peer.
func startNode(t *testing.T, name, addr, peer string) *Server {
	s, err := Start(Options{Dir: t.TempDir(), Listen: "127.0.0.1:0", Name: name, Cluster: &Cluster{Name: "cut", Listen: addr, Routes: []string{peer}}})
	if err != nil {
		t.Error(err)
		return nil
	}
	t.Cleanup(s.Shutdown)
	return s
}

// waitRoutes waits until ok holds for both nodes' route counts.
func waitRoutes(t *testing.T, what string, within time.Duration, a, b *Server, ok func(int) bool) {
	t.Helper()
	for deadline := time.Now().Add(within); !ok(a.ns.NumRoutes()) || !ok(b.ns.NumRoutes()); {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v (routes: a %d, b %d)", what, within, a.ns.NumRoutes(), b.ns.NumRoutes())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// link is a TCP relay to target that, once cut, drops what it reads.
type link struct {
	lis    net.Listener
	target string
	cut    atomic.Bool
	wg     sync.WaitGroup
}

func newLink(t *testing.T, target string) *link {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &link{lis: lis, target: target}
	var mu sync.Mutex
	var conns []net.Conn
	l.wg.Go(func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", l.target)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, up)
			mu.Unlock()
			l.wg.Go(func() { l.relay(up, c) })
			l.wg.Go(func() { l.relay(c, up) })
		}
	})
	t.Cleanup(func() {
		lis.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		l.wg.Wait()
	})
	return l
}

func (l *link) Addr() string { return l.lis.Addr().String() }

func (l *link) relay(dst io.Writer, src io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if err != nil {
			return
		}
		if !l.cut.Load() {
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
	}
}

// A node whose route port another process holds says so at once, as
// ErrListen, rather than after the whole start timeout.
func TestANodeWhoseRoutePortIsTakenSaysSoAtOnce(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	_, err = Start(Options{Dir: t.TempDir(), Listen: "127.0.0.1:0", Name: "a",
		Cluster: &Cluster{Name: "taken", Listen: held.Addr().String(), Routes: []string{"127.0.0.1:1"}}})
	if !errors.Is(err, ErrListen) {
		t.Fatalf("starting on a held route port: %v, want ErrListen", err)
	}
	if port := strconv.Itoa(held.Addr().(*net.TCPAddr).Port); !strings.Contains(err.Error(), port) {
		t.Errorf("the error does not name the port: %v", err)
	}
}
