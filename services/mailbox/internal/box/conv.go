package box

import (
	"time"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/services/mailbox/internal/inflight"
)

func captureProto(c *Capture) *mailboxv1.Capture { return c.Proto() }

func captureOf(b *mailboxv1.StoredInvocation) *Capture {
	c := inflight.CaptureOf(b.GetCapture())
	c.Notes = inflight.NotesOf(b.GetNotes())
	return &c
}

func postedOf(b *mailboxv1.StoredInvocation) time.Time { return time.UnixMilli(b.GetPostedUnixMs()) }

func timeOf(unixNano int64) time.Time { return time.Unix(0, unixNano) }
