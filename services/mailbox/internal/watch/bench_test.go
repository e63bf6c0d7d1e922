package watch

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// BenchmarkCallsChanges publishes a call's four changes (posted, handed,
// answered, collected) per op on one replica with nobody watching, as the
// mailbox does, and waits until its table holds the last: the process's
// CPU per call (getrusage; the in-process NATS server included) is the
// watch's share of a call.
func BenchmarkCallsChanges(b *testing.B) {
	srv := testkit.NATS(b)
	nc, err := nats.Connect("", srv.InProcess())
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	tr, err := New(nc, time.Hour, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Close()
	phases := []mailboxv1.Phase{mailboxv1.Phase_PHASE_QUEUED, mailboxv1.Phase_PHASE_HANDED_OUT,
		mailboxv1.Phase_PHASE_ANSWERED, mailboxv1.Phase_PHASE_COLLECTED}
	b.ReportAllocs()
	cpu := testkit.ProcessCPU(b)
	b.ResetTimer()
	for i := range b.N {
		id := fmt.Sprintf("inv-%d", i)
		for _, p := range phases {
			tr.Publish(change(id, p, func(s *mailboxv1.InvocationState) { s.Client, s.Tool, s.Poster = "laptop", "echo", "alice" }))
		}
	}
	last := fmt.Sprintf("inv-%d", b.N-1)
	for !tr.holdsFinished(last) {
		time.Sleep(time.Millisecond)
	}
	b.StopTimer()
	b.ReportMetric(float64((testkit.ProcessCPU(b)-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
}

func (t *Tracker) holdsFinished(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return finished(t.done, id)
}
