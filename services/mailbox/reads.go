package mailbox

import (
	"context"
	"errors"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/switchboard-run/switchboard/kit/presence"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
)

// reads opens a store's reads under read leases: the lease is the one
// reader per client across every mailbox replica, and what the registry
// shows as the client's presence.
type reads struct {
	store  inflight.Store
	leases *presence.Leases
	gauge  prometheus.Gauge // the reads held open
}

func (r reads) open(ctx context.Context, client, session string) (inflight.Read, error) {
	lease, err := r.leases.Acquire(ctx, client, session)
	switch {
	case errors.Is(err, presence.ErrHeld):
		return nil, inflight.SecondReader(client)
	case err != nil:
		return nil, status.Errorf(codes.Unavailable, "invocations: the mailbox cannot reach NATS to hold the read of %q (%v); read again in a moment", client, err)
	}
	read, err := r.store.OpenRead(ctx, client)
	if err != nil {
		lease.Release()
		return nil, err
	}
	// Present only now: whoever sees the client present may count on its
	// read being served.
	if err := lease.Hold(ctx); err != nil {
		read.Close()
		lease.Release()
		return nil, status.Errorf(codes.Unavailable, "invocations: the mailbox cannot reach NATS to hold the read of %q (%v); read again in a moment", client, err)
	}
	r.gauge.Inc()
	return &leasedRead{Read: read, lease: lease, ended: merge(read.Ended(), lease.Lost()), gauge: r.gauge}, nil
}

// leasedRead is a store's read with its lease: it ends when either does,
// and closing it gives the lease up after the read.
type leasedRead struct {
	inflight.Read
	lease *presence.Lease
	ended <-chan struct{}
	gauge prometheus.Gauge
	once  sync.Once
}

func (r *leasedRead) Ended() <-chan struct{} { return r.ended }

func (r *leasedRead) Close() {
	r.once.Do(func() {
		r.Read.Close()
		r.lease.Release()
		r.gauge.Dec()
	})
}

// merge returns a channel closed when a or b is.
func merge(a, b <-chan struct{}) <-chan struct{} {
	out := make(chan struct{})
	go func() {
		select {
		case <-a:
		case <-b:
		}
		close(out)
	}()
	return out
}
