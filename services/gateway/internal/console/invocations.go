package console

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
)

// Bounds of the invocations view: the newest rows of each kind are shown.
const (
	maxInFlightRows = 200
	maxFinishedRows = 50
)

// invocationRow is one invocation as the page shows it.
type invocationRow struct {
	*mailboxv1.InvocationState
	Phase    string
	Age      string // since it was posted
	Duration string // posted to answered, once its host answered
	Finished bool
}

// invocationsView is the page's two tables.
type invocationsView struct {
	InFlight, Finished []invocationRow
}

// invocations is the page; its script opens the live stream, whose first
// event is the table.
func (c *Console) invocations(w http.ResponseWriter, r *http.Request) {
	if _, _, ok := caller(w, r); !ok {
		return
	}
	render(w, "invocations", nil)
}

// invocationsLive follows the mailbox's watch as the caller (an admin sees
// every invocation, a driver those it posted) and redraws the tables after
// each burst of changes.
func (c *Console) invocationsLive(w http.ResponseWriter, r *http.Request) {
	ctx, _, ok := caller(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.Mailbox.Watch(ctx, &mailboxv1.WatchRequest{})
	if err != nil {
		refuseErr(w, err)
		return
	}
	table := &invocationTable{rows: map[string]*mailboxv1.InvocationState{}}
	for synced := false; !synced; {
		ev, err := stream.Recv()
		if err != nil {
			refuseErr(w, err)
			return
		}
		synced = ev.GetSynced() != nil
		table.apply(ev.GetInvocation())
	}
	dirty := make(chan struct{}, 1)
	dirty <- struct{}{} // the snapshot's table first
	done := make(chan error, 1)
	go func() {
		for {
			ev, err := stream.Recv()
			if err != nil {
				done <- err
				return
			}
			table.apply(ev.GetInvocation())
			select {
			case dirty <- struct{}{}:
			default:
			}
		}
	}()
	serve(ctx, w, "invocation-list", dirty, nil, done, func(_ context.Context, ev *events) error {
		return ev.render("invocation-list", "invocation-list", table.view())
	})
}

// invocationTable is what a page's watch has seen, bounded like the
// mailbox's own table (which sends nothing past its bounds).
type invocationTable struct {
	mu   sync.Mutex
	rows map[string]*mailboxv1.InvocationState
}

func (t *invocationTable) apply(st *mailboxv1.InvocationState) {
	if st == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rows[st.GetInvocation()] = st
	if len(t.rows) > 4*(maxInFlightRows+maxFinishedRows) {
		t.trim()
	}
}

// trim keeps the newest rows of each kind.
func (t *invocationTable) trim() {
	v := t.viewLocked()
	keep := map[string]*mailboxv1.InvocationState{}
	for _, r := range append(v.InFlight, v.Finished...) {
		keep[r.GetInvocation()] = r.InvocationState
	}
	t.rows = keep
}

func (t *invocationTable) view() invocationsView {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.viewLocked()
}

func (t *invocationTable) viewLocked() invocationsView {
	var v invocationsView
	now := time.Now()
	for _, st := range t.rows {
		posted := st.GetPosted().AsTime()
		row := invocationRow{InvocationState: st, Phase: phaseName(st.GetPhase())}
		if st.Posted != nil {
			row.Age = age(now.Sub(posted))
		}
		switch st.GetPhase() {
		case mailboxv1.Phase_PHASE_COLLECTED, mailboxv1.Phase_PHASE_CANCELLED:
			row.Finished = true
		}
		if st.Answered != nil && st.Posted != nil {
			row.Duration = st.GetAnswered().AsTime().Sub(posted).Round(time.Millisecond).String()
		}
		if row.Finished {
			v.Finished = append(v.Finished, row)
		} else {
			v.InFlight = append(v.InFlight, row)
		}
	}
	newest := func(a, b invocationRow) int { return b.GetChanged().AsTime().Compare(a.GetChanged().AsTime()) }
	slices.SortFunc(v.InFlight, newest)
	slices.SortFunc(v.Finished, newest)
	v.InFlight = v.InFlight[:min(len(v.InFlight), maxInFlightRows)]
	v.Finished = v.Finished[:min(len(v.Finished), maxFinishedRows)]
	return v
}

// phaseName is "handed out" for PHASE_HANDED_OUT.
func phaseName(p mailboxv1.Phase) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(p.String(), "PHASE_")), "_", " ")
}
