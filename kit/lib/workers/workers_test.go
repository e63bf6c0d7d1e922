package workers

import (
	"bytes"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-run/switchboard/kit/testkit"
)

func TestAnIdleWorkerRunsTheNextFunction(t *testing.T) {
	p := New(4)
	defer p.Close()
	ids := make(chan string, 2)
	for range 2 {
		p.Go(func() { ids <- goroutineID() })
		waitIdle(t, p, 1)
	}
	if a, b := <-ids, <-ids; a != b {
		t.Fatalf("the functions ran on goroutines %s and %s, want the idle worker's for both", a, b)
	}
}

func TestFunctionsRunAtOnceBeyondTheIdleKept(t *testing.T) {
	p := New(2)
	defer p.Close()
	const n = 10
	var started, ended sync.WaitGroup
	started.Add(n)
	ended.Add(n)
	release := make(chan struct{})
	for range n {
		p.Go(func() {
			defer ended.Done()
			started.Done()
			<-release // every function waits for the others: none may queue
		})
	}
	started.Wait()
	close(release)
	ended.Wait()
	waitIdle(t, p, 2)
	if n := idle(p); n != 2 {
		t.Fatalf("%d workers idle, want the 2 kept", n)
	}
}

func TestCloseEndsTheIdleAndLaterFunctionsStillRun(t *testing.T) {
	p := New(2)
	p.Go(func() {})
	waitIdle(t, p, 1)
	p.Close()
	ran := make(chan struct{})
	p.Go(func() { close(ran) })
	<-ran
	if n := idle(p); n != 0 {
		t.Fatalf("%d workers idle after Close", n)
	}
}

func idle(p *Pool) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}

// waitIdle waits until n workers are idle: a worker turns idle just after
// its function returns.
func waitIdle(t *testing.T, p *Pool, n int) {
	t.Helper()
	testkit.Eventually(t, fmt.Sprintf("%d idle workers", n), 10*time.Second, func() bool { return idle(p) >= n })
}

// goroutineID is the running goroutine's number, from its stack's header.
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	return string(bytes.Fields(buf)[1])
}
