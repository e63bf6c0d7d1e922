package act

import (
	"context"
	"time"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/lib/rawjson"
)

// progress is the reply of a capture that asked for progress and found the
// invocation running: the handle and the host's latest notes, read with
// Status (which takes nothing). Answered meanwhile, the reply is still
// running — the capture is left for the next capture to take, as Status
// never takes it.
func (h Handler) progress(ctx context.Context, invocation string) ([]byte, error) {
	st, err := h.Mailbox.Status(ctx, &mailboxv1.StatusRequest{Invocation: invocation})
	if err != nil {
		return nil, err
	}
	return EncodeProgress(invocation, st.GetProgress())
}

// EncodeProgress is a running capture's reply with its progress notes,
// oldest first; `[]` when there are none.
func EncodeProgress(invocation string, notes []*mailboxv1.ProgressNote) ([]byte, error) {
	rows := make([]noteReply, 0, len(notes))
	for _, n := range notes {
		if err := n.GetAt().CheckValid(); err != nil {
			return nil, badBackend("the mailbox gave note %d of invocation %q a time that is not one: %v", n.GetSeq(), invocation, err)
		}
		rows = append(rows, noteReply{Seq: n.GetSeq(), Progress: n.GetProgress(), Total: n.Total,
			Message: n.GetMessage(), At: n.GetAt().AsTime().UTC().Format(time.RFC3339Nano)})
	}
	return rawjson.Marshal(routed{head: ok("routed"), Invocation: invocation, Progress: &rows})
}
