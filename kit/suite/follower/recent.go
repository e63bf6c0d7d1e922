package follower

import mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"

// recentOverhead is what one remembered capture costs beyond its text.
const recentOverhead = 128

// recent remembers the last captures a follower sent, by invocation id:
// delivery is at-least-once, and the id is the key that lets a redelivery
// be answered without running the tool again. It is bounded in count and
// in bytes; the oldest is forgotten first.
type recent struct {
	maxCount, maxBytes int
	bytes              int
	order              []string // oldest first
	byID               map[string]*mailboxv1.Capture
}

func newRecent(maxCount, maxBytes int) *recent {
	return &recent{maxCount: maxCount, maxBytes: maxBytes, byID: map[string]*mailboxv1.Capture{}}
}

func (r *recent) get(id string) *mailboxv1.Capture { return r.byID[id] }

// put remembers c as id's capture. One larger than the whole byte bound is
// not kept.
func (r *recent) put(id string, c *mailboxv1.Capture) {
	size := captureSize(id, c)
	if _, ok := r.byID[id]; ok || size > r.maxBytes {
		return
	}
	for len(r.order) > 0 && (len(r.order) >= r.maxCount || r.bytes+size > r.maxBytes) {
		oldest := r.order[0]
		r.bytes -= captureSize(oldest, r.byID[oldest])
		delete(r.byID, oldest)
		r.order[0] = ""
		r.order = r.order[1:]
	}
	r.order = append(r.order, id)
	r.byID[id] = c
	r.bytes += size
}

func captureSize(id string, c *mailboxv1.Capture) int {
	return len(id) + len(c.GetStdout()) + len(c.GetStderr()) + recentOverhead
}
