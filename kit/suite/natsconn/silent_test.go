package natsconn_test

import (
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/switchboard-run/switchboard/kit/suite/natsconn"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// A client writing hard to a server that went silent (cut off the network:
// its socket neither reads nor resets) moves to another server within
// seconds, not after NATS's one-minute write timeout: its blocked writes
// hold the lock its pings need, so only the write's own bound notices.
func TestABusyClientLeavesASilentServerWithinSeconds(t *testing.T) {
	t.Parallel()
	silent, other := testkit.NATS(t), testkit.NATS(t)
	px := newProxy(t, strings.TrimPrefix(silent.ClientURL(), "nats://"))
	c := natsconn.Config{URLs: "nats://" + px.addr + "," + other.ClientURL()}
	nc, err := c.Connect("silent-test", slog.New(slog.DiscardHandler), nats.DontRandomize())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if nc.ConnectedUrl() != "nats://"+px.addr {
		t.Fatalf("connected to %s first; want the proxy", nc.ConnectedUrl())
	}
	px.silence()
	cut := time.Now()
	payload := make([]byte, 64<<10)
	done := make(chan struct{})
	go func() { // a busy client: writes go on until it has moved
		defer close(done)
		for nc.ConnectedUrl() != other.ClientURL() && !nc.IsClosed() && time.Since(cut) < 2*time.Minute {
			_ = nc.Publish("busy", payload)
		}
	}()
	testkit.Eventually(t, "the client on the other server", 2*natsconn.FlusherTimeout+5*time.Second, func() bool {
		return nc.ConnectedUrl() == other.ClientURL()
	})
	t.Logf("moved to the other server %v after the first went silent", time.Since(cut).Round(time.Millisecond))
	<-done
}

// proxy forwards TCP to a server until silenced; then it stops reading and
// writing but keeps every socket open, as a peer cut off the network does.
type proxy struct {
	addr  string
	mu    sync.Mutex
	quiet bool
}

func newProxy(t *testing.T, target string) *proxy {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{addr: lis.Addr().String()}
	var conns []net.Conn
	t.Cleanup(func() {
		lis.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			in, err := lis.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			p.mu.Lock()
			conns = append(conns, in, out)
			p.mu.Unlock()
			go p.pipe(out, in)
			go p.pipe(in, out)
		}
	}()
	return p
}

func (p *proxy) silence() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.quiet = true
}

// pipe copies in small reads, checking before each whether to go silent.
func (p *proxy) pipe(dst io.Writer, src io.Reader) {
	buf := make([]byte, 4096)
	for {
		p.mu.Lock()
		quiet := p.quiet
		p.mu.Unlock()
		if quiet {
			return // neither reads nor closes: the socket's buffers fill
		}
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
