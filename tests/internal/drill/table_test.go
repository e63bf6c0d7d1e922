package drill

import (
	"testing"
	"time"
)

// A call counts in the row of the first fault that came while it was in
// flight, else in the phase it ran in: a refusal caused by one fault but
// answered after the next is the first fault's.
func TestPhaseOfCountsACallInTheFirstFaultItSaw(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 7, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	phases := []Phase{{Fault: "none", At: at(0)}, {Fault: "a", At: at(10)}, {Fault: "b", At: at(20)}}
	for _, c := range []struct {
		name         string
		began, ended time.Time
		want         int
	}{
		{"before any fault", at(1), at(2), 0},
		{"cut by a", at(9), at(11), 1},
		{"cut by a, answered after b", at(9), at(21), 1},
		{"begun after a, cut by b", at(12), at(25), 2},
		{"within b", at(21), at(22), 2},
		{"never settled, begun before a", at(5), time.Time{}, 1},
		{"never settled, begun after b", at(25), time.Time{}, 2},
	} {
		if got := phaseOf(phases, &record{began: c.began, ended: c.ended}); got != c.want {
			t.Errorf("%s: phase %d, want %d", c.name, got, c.want)
		}
	}
}
