package testkit

import (
	"errors"
	"net"
	"time"
)

// Eventually waits until cond holds, failing with what after timeout. It
// polls: a test waiting on other processes or on a server's state, never a
// product path.
func Eventually(t TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	Await(t, what, timeout, func() error {
		if cond() {
			return nil
		}
		return errNotYet
	})
}

var errNotYet = errors.New("not yet")

// Await waits until check returns nil, failing after timeout with what and
// check's last error. It polls soon at first (a millisecond), then every
// 20 ms.
func Await(t TB, what string, timeout time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for pause := time.Millisecond; ; pause = min(2*pause, 20*time.Millisecond) {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			if errors.Is(err, errNotYet) {
				t.Fatalf("timed out after %v waiting for %s", timeout, what)
			}
			t.Fatalf("timed out after %v waiting for %s: %v", timeout, what, err)
		}
		time.Sleep(pause)
	}
}

// Receive waits for a value on ch, failing with what after timeout.
func Receive[T any](t TB, ch <-chan T, timeout time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(timeout):
		t.Fatalf("timed out after %v waiting for %s", timeout, what)
		var zero T
		return zero
	}
}

// WaitListening waits until addr accepts a TCP connection.
func WaitListening(t TB, addr string, timeout time.Duration) {
	t.Helper()
	Eventually(t, "something to listen on "+addr, timeout, func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}

// StartHTTP runs bin, a pinned MCP server (see Tool), as a Streamable HTTP
// server on addr (its -http flag) and waits until it accepts connections.
func StartHTTP(t TB, bin, addr string, args ...string) *Proc {
	t.Helper()
	p := Start(t, bin, append([]string{"-http", addr}, args...)...)
	WaitListening(t, addr, 20*time.Second)
	return p
}
