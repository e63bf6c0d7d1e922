package testkit

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Goroutines counts the live goroutines by the function that started each.
// Two counts taken around a piece of work differ exactly by what the work
// left running. The key is the creator, not the function a goroutine stands
// in now: a long-lived goroutine moves between waits, but not between
// creators.
type Goroutines struct {
	count map[string]int
	tops  map[string][]string // the functions they stand in, for the report
}

// CountGoroutines takes a census of every goroutine but the caller's.
func CountGoroutines() Goroutines {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := Goroutines{count: map[string]int{}, tops: map[string][]string{}}
	for i, g := range strings.Split(string(buf), "\n\n") {
		if i == 0 {
			continue // the caller's own stack comes first
		}
		creator, top := describe(g)
		out.count[creator]++
		out.tops[creator] = append(out.tops[creator], top)
	}
	return out
}

// describe names a goroutine's creator and the function it stands in,
// dropping arguments, addresses and line numbers.
func describe(stack string) (creator, top string) {
	lines := strings.Split(strings.TrimSpace(stack), "\n")
	creator, top = "the runtime", "?"
	if len(lines) > 1 {
		top = funcName(lines[1])
	}
	for _, l := range lines {
		if rest, ok := strings.CutPrefix(l, "created by "); ok {
			creator, _, _ = strings.Cut(rest, " in goroutine")
		}
	}
	return creator, top
}

func funcName(line string) string {
	if i := strings.LastIndexByte(line, '('); i > 0 {
		return line[:i]
	}
	return line
}

// Grown lists the creators whose goroutines number more now than in base,
// with both counts and where the goroutines stand, sorted; ignore drops
// creators whose name contains any of the given substrings (what is known
// to start lazily and live on).
func (now Goroutines) Grown(base Goroutines, ignore ...string) []string {
	var out []string
	for k, n := range now.count {
		if n <= base.count[k] || slices.ContainsFunc(ignore, func(s string) bool { return strings.Contains(k, s) }) {
			continue
		}
		tops := slices.Compact(slices.Sorted(slices.Values(now.tops[k])))
		out = append(out, fmt.Sprintf("%d (were %d) created by %s, in %s", n, base.count[k], k, strings.Join(tops, ", ")))
	}
	slices.Sort(out)
	return out
}

// WaitGoroutinesBack waits until no kind of goroutine outnumbers base (but
// those ignore names), failing with the kinds that grew when it does not
// happen within timeout. It waits for the condition: goroutines that end
// asynchronously (a closed connection's reader) are given the time they
// take, and nothing is compared by a bare total.
func WaitGoroutinesBack(t TB, base Goroutines, timeout time.Duration, ignore ...string) {
	t.Helper()
	Await(t, "goroutines back to where they were", timeout, func() error {
		if grown := CountGoroutines().Grown(base, ignore...); len(grown) > 0 {
			return fmt.Errorf("goroutines left behind:\n  %s", strings.Join(grown, "\n  "))
		}
		return nil
	})
}
