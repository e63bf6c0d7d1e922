package bridge

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	"github.com/switchboard-run/switchboard/services/bridge/internal/mountstore"
)

// leaseEvery is how often an exclusive mount's lease is renewed by its
// holder, and tried by the others: a fifth of the lease's life, so a
// holder that misses two renewals in a row has stopped its server (at half
// a lease) long before the lease lapses, and a lease that lapses is taken
// within a second.
const leaseEvery = mountstore.LeaseTTL / 5

// entry is one stored mount on this replica: its config at a revision,
// and its server while this replica runs it. A default mount runs on every
// replica; an exclusive one only while this replica holds its lease.
type entry struct {
	s      *Service
	client string
	cfg    *bridgev1.ServerConfig
	rev    uint64

	cancel context.CancelFunc // ends keep (exclusive mounts)
	kept   chan struct{}      // closed when keep has returned

	mu       sync.Mutex
	m        *mount // nil while another replica runs it
	withdraw bool   // stopping because the mount was removed
}

// startEntry begins running cfg here: at once for a default mount; for an
// exclusive one, if its lease is free now, and from then on whenever it is.
func (s *Service) startEntry(client string, cfg *bridgev1.ServerConfig, rev uint64) *entry {
	e := &entry{s: s, client: client, cfg: cfg, rev: rev}
	if !cfg.GetExclusive() {
		e.m = newMount(s, client, cfg)
		e.m.begin()
		return e
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel, e.kept = cancel, make(chan struct{})
	held := e.tryHold(ctx) // Mount answers with where the server runs
	go e.keep(ctx, held)
	return e
}

// mount is the server while this replica runs it, else nil.
func (e *entry) mounted() *mount {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.m
}

// stop ends the entry here: its server stops (its tools withdrawn if
// withdraw: the mount was removed) and an exclusive mount's lease is given
// up, so another replica takes it over at once.
func (e *entry) stop(withdraw bool) {
	e.mu.Lock()
	e.withdraw = withdraw
	e.mu.Unlock()
	if e.cancel != nil {
		e.cancel()
		<-e.kept
	}
	if m := e.mounted(); m != nil {
		m.stop(withdraw)
	}
}

// tryHold takes the lease if it is free and starts the server; it returns
// the lease's revision, or 0.
func (e *entry) tryHold(ctx context.Context) uint64 {
	rctx, cancel := context.WithTimeout(ctx, leaseEvery)
	defer cancel()
	rev, err := e.s.store.Acquire(rctx, e.client, e.s.replica)
	if err != nil {
		if !errors.Is(err, mountstore.ErrHeld) && ctx.Err() == nil {
			e.s.log.Warn("taking an exclusive mount's lease", "client", e.client, "error", err)
		}
		return 0
	}
	m := newMount(e.s, e.client, e.cfg)
	m.begin()
	e.mu.Lock()
	e.m = m
	e.mu.Unlock()
	e.s.log.Info("runs the exclusive mount: took its lease", "client", e.client, "replica", e.s.replica)
	e.s.kick()
	return rev
}

// drop stops the server after the lease was lost; its tools stay
// advertised for the replica taking it over.
func (e *entry) drop(why string) {
	e.mu.Lock()
	m := e.m
	e.m = nil
	e.mu.Unlock()
	if m == nil {
		return
	}
	m.fault(why)
	m.stop(false)
	e.s.kick()
}

// keep renews the lease while it is held (rev > 0) and tries to take it
// while it is not, every leaseEvery, until ctx ends; then it stops the
// server and gives the lease up. A renewal refused because the lease moved
// on, or none confirmed for half a lease, stops the server before another
// replica can hold the lease: two never run it at once.
func (e *entry) keep(ctx context.Context, rev uint64) {
	defer close(e.kept)
	t := time.NewTicker(leaseEvery)
	defer t.Stop()
	renewed := time.Now()
	for {
		select {
		case <-ctx.Done():
			e.mu.Lock()
			m, withdraw := e.m, e.withdraw
			e.m = nil
			e.mu.Unlock()
			if m != nil {
				m.stop(withdraw)
			}
			if rev != 0 {
				rctx, cancel := context.WithTimeout(context.Background(), leaseEvery)
				e.s.store.Release(rctx, e.client, rev)
				cancel()
			}
			return
		case <-t.C:
		}
		if rev == 0 {
			if rev = e.tryHold(ctx); rev != 0 {
				renewed = time.Now()
			}
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, leaseEvery)
		next, err := e.s.store.Renew(rctx, e.client, e.s.replica, rev)
		cancel()
		switch {
		case err == nil:
			rev, renewed = next, time.Now()
		case errors.Is(err, mountstore.ErrHeld):
			e.drop("stopped here: the exclusive mount's lease lapsed and another bridge replica took it")
			rev = 0
		case time.Since(renewed) > mountstore.LeaseTTL/2 && ctx.Err() == nil:
			e.drop(fmt.Sprintf("stopped here: the exclusive mount's lease could not be renewed for %v (%v), so another bridge replica may take it",
				time.Since(renewed).Round(time.Millisecond), err))
			rev = 0
		}
	}
}

// status is the entry as ListServers shows it from this replica.
func (e *entry) status() *bridgev1.ServerStatus {
	var st *bridgev1.ServerStatus
	if m := e.mounted(); m != nil {
		st = m.status()
	} else {
		st = &bridgev1.ServerStatus{Client: e.client, Transport: transportName(e.cfg), State: bridgev1.State_STATE_STANDBY}
	}
	st.Replica, st.Exclusive = e.s.replica, e.cfg.GetExclusive()
	return st
}

// awaitSettled waits until the first start here has an outcome; at once
// when this replica does not run the server.
func (e *entry) awaitSettled(ctx context.Context) {
	if m := e.mounted(); m != nil {
		m.awaitSettled(ctx)
	}
}
