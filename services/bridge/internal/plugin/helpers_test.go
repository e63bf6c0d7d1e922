package plugin

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// fakePkg is a real backend program whose tools each exercise one part of
// the wire (testdata/fakebackend).
const fakePkg = "github.com/switchboard-run/switchboard/services/bridge/internal/plugin/testdata/fakebackend"

// reports collects what a backend reported, in order.
type reports struct {
	mu      sync.Mutex
	notices []string
	faults  []string
	stderr  strings.Builder
}

func (r *reports) notice(s string) { r.mu.Lock(); r.notices = append(r.notices, s); r.mu.Unlock() }
func (r *reports) fault(s string)  { r.mu.Lock(); r.faults = append(r.faults, s); r.mu.Unlock() }

func (r *reports) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stderr.Write(p)
}

func (r *reports) snapshot() (notices, faults []string, stderr string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.notices...), append([]string(nil), r.faults...), r.stderr.String()
}

// start returns a backend of the fake program (args after its path) and
// what it reports; it is closed when the test ends.
func start(t *testing.T, m *bridgev1.PluginManifest, restart int, args ...string) (*Backend, *reports) {
	t.Helper()
	if m == nil {
		m = &bridgev1.PluginManifest{}
	}
	if len(m.Command) == 0 {
		m.Command = append([]string{testkit.Build(t, fakePkg)}, args...)
	}
	r := &reports{}
	b := New(Options{Client: "notes", Manifest: m, Restart: restart, Stderr: r, OnNotice: r.notice, OnFault: r.fault})
	t.Cleanup(func() { _ = b.Close() })
	return b, r
}

// call submits tool with args and waits for its outcome.
func call(t *testing.T, b *Backend, tool, args string) (*mailboxv1.Capture, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, answer := b.Submit(ctx, tool, args, Hearing{}).Wait()
	if ctx.Err() != nil {
		t.Fatalf("%s: no outcome before the deadline", tool)
	}
	return c, answer
}

// answered is call for a call that must be answered.
func answered(t *testing.T, b *Backend, tool, args string) *mailboxv1.Capture {
	t.Helper()
	c, answer := call(t, b, tool, args)
	if !answer || c == nil {
		t.Fatalf("%s was not answered", tool)
	}
	return c
}

func awaitDone(t *testing.T, b *Backend) {
	t.Helper()
	select {
	case <-b.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the backend never ended")
	}
}
