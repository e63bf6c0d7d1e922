package limits

import (
	"testing"

	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/telemetry"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// Each refusal is counted under the caller's grade and the limit that
// refused it; admitted calls and unlimited grades count nothing.
func TestRefusalsAreCountedByGradeAndLimit(t *testing.T) {
	tel := telemetry.NewMetrics()
	l, _ := newAt(Config{MaxCallers: 2, Grades: map[identity.Grade]Limit{
		identity.Driver: {Rate: 0.001, Burst: 1},
		identity.Host:   {Concurrent: 1},
	}})
	l.Count(tel)
	host := identity.Identity{Name: "box", Grade: identity.Host}
	if _, err := l.Acquire(driver("alice")); err != nil {
		t.Fatal(err)
	}
	refusal(t, errOf(l.Acquire(driver("alice"))))     // rate
	refusal(t, errOf(l.AcquireN(driver("alice"), 2))) // a batch past the burst: rate
	if _, err := l.Acquire(host); err != nil {
		t.Fatal(err)
	}
	refusal(t, errOf(l.Acquire(host)))     // in flight
	refusal(t, errOf(l.AcquireN(host, 2))) // a batch past the calls in flight
	// The table holds its two callers, alice and box, each with a call in
	// flight (neither was released): a newcomer finds no room.
	refusal(t, errOf(l.Acquire(driver("carol")))) // callers
	if _, err := l.Acquire(identity.Identity{Name: "root", Grade: identity.Admin}); err != nil {
		t.Fatal(err)
	}
	m := testkit.ScrapeHandler(t, tel.MetricsHandler())
	for _, c := range []struct {
		grade, limit string
		want         float64
	}{
		{"driver", ByRate, 2},
		{"host", ByInFlight, 2},
		{"driver", ByCallers, 1},
		{"driver", ByInFlight, 0},
		{"host", ByRate, 0},
		{"admin", ByRate, 0},
	} {
		if got := m.Value(RefusalsMetric, "grade", c.grade, "limit", c.limit); got != c.want {
			t.Errorf("%s refused by %s: %v, want %v", c.grade, c.limit, got, c.want)
		}
	}
}

func errOf(_ func(), err error) error { return err }
