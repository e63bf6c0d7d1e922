package telemetry

import "sync"

// Other is the label value every value past a Bounded's limit shares.
const Other = "_other"

// Bounded keeps a label's cardinality bounded: the first max distinct
// values keep their names, and every later one is Other. Ten thousand
// clients are then at most max+1 series, and the busiest names — which
// are usually the first seen — stay visible.
type Bounded struct {
	max  int
	mu   sync.Mutex
	seen map[string]struct{}
}

// NewBounded returns a bound of max named values.
func NewBounded(max int) *Bounded { return &Bounded{max: max, seen: map[string]struct{}{}} }

// Value returns v if it is one of the named values (naming it if there is
// room), else Other.
func (b *Bounded) Value(v string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.seen[v]; ok {
		return v
	}
	if len(b.seen) >= b.max {
		return Other
	}
	b.seen[v] = struct{}{}
	return v
}
