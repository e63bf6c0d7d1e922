package box

import (
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
)

func captureProto(c *Capture) *mailboxv1.Capture { return c.Proto() }

func captureOf(b *mailboxv1.StoredInvocation) *Capture {
	c := inflight.CaptureOf(b.GetCapture())
	c.Notes = notesOf(b.GetNotes())
	return &c
}

func notesProto(ns []inflight.Note) []*mailboxv1.ProgressNote {
	out := make([]*mailboxv1.ProgressNote, len(ns))
	for i, n := range ns {
		out[i] = &mailboxv1.ProgressNote{Seq: n.Seq, Progress: n.Progress, Total: n.Total, Message: n.Message, At: timestamppb.New(n.At),
			Log: inflight.LogProto(n.Log)}
	}
	return out
}

func notesOf(ps []*mailboxv1.ProgressNote) []inflight.Note {
	if len(ps) == 0 {
		return nil
	}
	out := make([]inflight.Note, len(ps))
	for i, p := range ps {
		out[i] = inflight.Note{Seq: p.GetSeq(), Progress: p.GetProgress(), Total: p.Total, Message: p.GetMessage(), At: p.GetAt().AsTime(),
			Log: inflight.LogOf(p.GetLog())}
	}
	return out
}

func postedOf(b *mailboxv1.StoredInvocation) time.Time { return time.UnixMilli(b.GetPostedUnixMs()) }

func timeOf(unixNano int64) time.Time { return time.Unix(0, unixNano) }
