package host

import (
	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/capture"
)

// recent remembers the last captures this host produced, by invocation id:
// delivery is at-least-once, and the id is the key that lets a redelivery
// be answered without running the tool again.
type recent struct {
	max   int
	order []string
	byID  map[string]*mailboxv1.Capture
}

func newRecent(max int) *recent {
	return &recent{max: max, byID: map[string]*mailboxv1.Capture{}}
}

func (r *recent) get(id string) *mailboxv1.Capture { return r.byID[id] }

func (r *recent) put(id string, c *mailboxv1.Capture) {
	if _, ok := r.byID[id]; ok {
		return
	}
	if len(r.order) == r.max {
		delete(r.byID, r.order[0])
		r.order = r.order[1:]
	}
	r.order = append(r.order, id)
	r.byID[id] = c
}

// capture127 answers a tool this host does not have.
func capture127(tool string) *mailboxv1.Capture {
	return capture.Failed(capture.ExitNotFound, "switchboard: tool %q is not in this host's tools file", tool)
}
