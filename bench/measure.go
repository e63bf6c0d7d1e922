package main

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// latency is a set of samples of one operation.
type latency struct {
	samples []time.Duration
}

func (l *latency) quantile(q float64) time.Duration {
	if len(l.samples) == 0 {
		return 0
	}
	s := slices.Clone(l.samples)
	slices.Sort(s)
	return s[min(int(q*float64(len(s))), len(s)-1)]
}

func (l *latency) p50() time.Duration { return l.quantile(0.50) }
func (l *latency) p99() time.Duration { return l.quantile(0.99) }

// sample runs op warm times unmeasured, then n times one after another,
// timing each.
func sample(ctx context.Context, warm, n int, op func(context.Context) error) (*latency, error) {
	for range warm {
		if err := op(ctx); err != nil {
			return nil, err
		}
	}
	l := &latency{samples: make([]time.Duration, 0, n)}
	for range n {
		start := time.Now()
		if err := op(ctx); err != nil {
			return nil, err
		}
		l.samples = append(l.samples, time.Since(start))
	}
	return l, nil
}

// throughput runs op from workers goroutines for d after a short warm-up
// and returns completed operations per second.
func throughput(ctx context.Context, workers int, d time.Duration, op func(context.Context) error) (float64, error) {
	run := func(d time.Duration) (int64, error) {
		var done atomic.Int64
		var firstErr error
		var once sync.Once
		stop := time.Now().Add(d)
		var wg sync.WaitGroup
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(stop) {
					if err := op(ctx); err != nil {
						once.Do(func() { firstErr = err })
						return
					}
					done.Add(1)
				}
			}()
		}
		wg.Wait()
		return done.Load(), firstErr
	}
	if _, err := run(d / 5); err != nil {
		return 0, err
	}
	start := time.Now()
	n, err := run(d)
	return float64(n) / time.Since(start).Seconds(), err
}
