package box

import "time"

// Captures taken from this replica's memory with a retry key are kept a
// while, for a retry of that collection whose reply was lost (a record
// keeps its own, stTaken). Bounded in count and bytes; past either bound
// the oldest go first.

// callKey names a capture handed to a Call waiting on another replica: the
// Call's reply may die with that replica, so its poster's next keyed
// collection gets it (no driver's key can be it: they are [A-Za-z0-9._-]).
const callKey = "~call"

// retryGrace is how long a capture taken with a retry key is kept.
const retryGrace = time.Minute

// Bounds of the kept captures.
const (
	maxTaken      = 10_000
	maxTakenBytes = 64 << 20
)

type takenCapture struct {
	id, poster, key string
	capture         Capture
	until           int64 // unix nanoseconds
}

// takenSet is the kept captures, oldest first.
type takenSet struct {
	byID  map[string]*takenCapture
	order []*takenCapture
	bytes int
}

func (t *takenSet) size(c *takenCapture) int { return c.capture.Size() }

// keep remembers a capture taken at now by the collection named key.
func (t *takenSet) keep(now time.Time, id, poster, key string, c Capture) {
	if t.byID == nil {
		t.byID = map[string]*takenCapture{}
	}
	c.Notes = nil // a retry's answer needs none, and the bytes counted are the capture's
	tc := &takenCapture{id: id, poster: poster, key: key, capture: c, until: now.Add(retryGrace).UnixNano()}
	t.byID[id] = tc
	t.order = append(t.order, tc)
	t.bytes += t.size(tc)
	t.trim(now)
}

// trim drops what expired, and the oldest past the bounds.
func (t *takenSet) trim(now time.Time) {
	n := 0
	for n < len(t.order) {
		tc := t.order[n]
		if tc.until > now.UnixNano() && len(t.order)-n <= maxTaken && t.bytes <= maxTakenBytes {
			break
		}
		delete(t.byID, tc.id)
		t.bytes -= t.size(tc)
		n++
	}
	t.order = t.order[n:]
}

// again returns the capture of id for a retry of the collection that took
// it, or nil.
func (t *takenSet) again(now time.Time, id, poster, key string) *Capture {
	t.trim(now)
	tc := t.byID[id]
	if tc == nil || key == "" || (tc.key != key && tc.key != callKey) || tc.poster != poster {
		return nil
	}
	c := tc.capture
	return &c
}
