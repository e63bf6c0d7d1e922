package bridge

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	"github.com/switchboard-run/switchboard/kit/lib/retry"
	"github.com/switchboard-run/switchboard/services/bridge/internal/mountstore"
)

// The stored mounts reach this replica only through its watch of the
// store: Mount and Unmount write the store and wait for the watch to have
// applied the change here, so every replica applies the same changes in the
// same order, and a change the watch brings twice (after a redial) is
// applied once.

// follow applies the store's mounts here until ctx ends, watching again
// (under the suite's backoff) when the watch breaks.
func (s *Service) follow(ctx context.Context) {
	loop := retry.Loop{Policy: retry.Default, OnRetry: func(err error, wait time.Duration) {
		s.log.Warn("watching the stored mounts", "error", err, "again_in", wait)
	}}
	_ = loop.Forever(ctx, func(ctx context.Context) (bool, error) {
		progressed := false
		err := s.store.Watch(ctx, func(c mountstore.Change) {
			progressed = true
			if c.Config == nil {
				s.remove(c.Client)
			} else {
				s.apply(c.Client, c)
			}
		}, func(present map[string]bool) {
			progressed = true
			s.reconcile(present)
			s.syncOnce.Do(func() { close(s.synced) })
		})
		return progressed, err
	})
}

// apply runs the change here unless this replica already runs that
// revision or a later one.
func (s *Service) apply(client string, c mountstore.Change) {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	s.mu.Lock()
	closed, old := s.closed, s.entries[client]
	s.mu.Unlock()
	if closed || (old != nil && old.rev >= c.Rev) {
		return
	}
	if old != nil {
		// Its tools stay advertised: the new server re-advertises over them,
		// with no gap in which invocations would be refused.
		old.stop(false)
	}
	e := s.startEntry(client, c.Config, c.Rev)
	s.mu.Lock()
	s.entries[client] = e
	s.mu.Unlock()
	s.log.Info("mounted", "client", client, "transport", transportName(c.Config), "exclusive", c.Config.GetExclusive(), "revision", c.Rev)
	s.changed()
	s.catalog.publish(bridgev1.CatalogChange_CATALOG_CHANGE_MOUNTS, client)
}

// remove stops client's server here and withdraws its tools: the mount was
// removed from the store.
func (s *Service) remove(client string) {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	s.mu.Lock()
	e, ok := s.entries[client]
	s.mu.Unlock()
	if !ok {
		return
	}
	e.stop(true)
	// Gone from the entries only once stopped: Unmount waits for that.
	s.mu.Lock()
	delete(s.entries, client)
	s.mu.Unlock()
	s.log.Info("unmounted", "client", client)
	s.changed()
	s.catalog.publish(bridgev1.CatalogChange_CATALOG_CHANGE_MOUNTS, client)
}

// reconcile removes what a watch that (re)started no longer finds stored:
// mounts removed while this replica was not watching.
func (s *Service) reconcile(present map[string]bool) {
	s.mu.Lock()
	var gone []string
	for c := range s.entries {
		if !present[c] {
			gone = append(gone, c)
		}
	}
	s.mu.Unlock()
	for _, c := range gone {
		s.remove(c)
	}
}

// changed wakes whoever waits on the entries, and the announcer.
func (s *Service) changed() {
	s.mu.Lock()
	close(s.change)
	s.change = make(chan struct{})
	s.mu.Unlock()
	s.kick()
}

// awaitEntry waits until the watch has applied client's mount at rev or
// later (rev 0: until it is gone) and returns the entry (nil when gone).
func (s *Service) awaitEntry(ctx context.Context, client string, rev uint64) (*entry, error) {
	for {
		s.mu.Lock()
		e, change, closed := s.entries[client], s.change, s.closed
		s.mu.Unlock()
		switch {
		case rev == 0 && e == nil:
			return nil, nil
		case rev != 0 && e != nil && e.rev >= rev:
			return e, nil
		case closed:
			return nil, errClosed
		}
		select {
		case <-change:
		case <-ctx.Done():
			return nil, fmt.Errorf("the mount of %q is stored, but this bridge replica had not applied it when the call ended (%w); every replica applies it as it sees it", client, ctx.Err())
		}
	}
}

// kick asks the announcer to announce now.
func (s *Service) kick() {
	select {
	case s.announceNow <- struct{}{}:
	default:
	}
}

// announce records in the store what this replica runs: at every change,
// and every leaseEvery so the record does not lapse; the record goes when
// ctx ends.
func (s *Service) announce(ctx context.Context) {
	defer close(s.announced)
	t := time.NewTicker(leaseEvery)
	defer t.Stop()
	for {
		actx, cancel := context.WithTimeout(ctx, leaseEvery)
		if err := s.store.Announce(actx, s.replica, s.running()); err != nil && ctx.Err() == nil {
			s.log.Debug("announcing what this replica runs", "error", err)
		}
		cancel()
		select {
		case <-ctx.Done():
			wctx, cancel := context.WithTimeout(context.Background(), leaseEvery)
			s.store.Withdraw(wctx, s.replica)
			cancel()
			return
		case <-t.C:
		case <-s.announceNow:
		}
	}
}

// running lists the clients whose servers run here, sorted.
func (s *Service) running() []string {
	s.mu.Lock()
	entries := make([]*entry, 0, len(s.entries))
	for _, e := range s.entries {
		entries = append(entries, e)
	}
	s.mu.Unlock()
	out := []string{}
	for _, e := range entries {
		if e.mounted() != nil {
			out = append(out, e.client)
		}
	}
	slices.Sort(out)
	return out
}

// replicaName is the replica's name: --replica, else bridge-<host>-<pid>.
func replicaName(flag string) (string, error) {
	if flag != "" {
		if !replicaPattern.MatchString(flag) {
			return "", fmt.Errorf("--replica %q: a replica name is 1 to 64 letters, digits, '-' and '_', starting with a letter or digit", flag)
		}
		return flag, nil
	}
	host, _ := os.Hostname()
	host = strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9') {
			return r
		}
		return '-'
	}, host)
	name := fmt.Sprintf("bridge-%s-%d", host, os.Getpid())
	if len(name) > 64 {
		name = name[:64]
	}
	return name, nil
}

var replicaPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)
