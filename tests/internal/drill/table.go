package drill

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// A Phase is a stretch of a drill, from a fault (or the start) to the next.
type Phase struct {
	// Fault says what happened at At: "none" for the stretch before any.
	Fault string
	At    time.Time
}

// Table is the drill's report, one row per phase, as markdown: the calls
// counted in it across drivers (a call in flight when a fault came counts in
// that fault's row, the first fault if several came; any other in the phase
// it ran in), how many were answered, refused with a sentence, lost, and
// answered by a run made twice (ran counts runs by invocation, for the
// targets that record them); the slowest answer; and recovery, the time
// from the fault until every driver had an answer to a call begun after it.
// Call it once the drivers have stopped.
func Table(drivers []*Driver, phases []Phase, ran map[string]int) string {
	var b strings.Builder
	b.WriteString("| fault | calls | answered | refused | lost | run twice | slowest | recovery |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for i, p := range phases {
		var calls, answered, refused, lost, twice int
		var slowest, recovery time.Duration
		never := false
		for _, d := range drivers {
			d.mu.Lock()
			first := time.Duration(-1)
			for _, r := range d.calls {
				if after := !r.began.Before(p.At); after && r.settled && r.refusal == nil {
					if took := r.ended.Sub(p.At); first < 0 || took < first {
						first = took
					}
				}
				if phaseOf(phases, r) != i {
					continue
				}
				calls++
				switch {
				case !r.settled || errors.Is(r.refusal, ErrLost):
					lost++
				case r.refusal != nil:
					refused++
				default:
					answered++
					slowest = max(slowest, r.ended.Sub(r.began))
					if r.target.Counted && r.id != "" && ran[r.id] > 1 {
						twice++
					}
				}
			}
			d.mu.Unlock()
			recovery, never = max(recovery, first), never || first < 0
		}
		rec := recovery.Round(time.Millisecond).String()
		switch {
		case i == 0:
			rec = "—"
		case never:
			rec = "never"
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %v | %s |\n", p.Fault, calls, answered, refused, lost, twice,
			slowest.Round(time.Millisecond), rec)
	}
	return b.String()
}

// phaseOf is the row r counts in: the first fault that came while it was in
// flight (a call never settled is in flight to the end), else the phase it
// began in.
func phaseOf(phases []Phase, r *record) int {
	i := 0
	for i+1 < len(phases) && !r.began.Before(phases[i+1].At) {
		i++
	}
	if i+1 < len(phases) && (r.ended.IsZero() || r.ended.After(phases[i+1].At)) {
		i++
	}
	return i
}
