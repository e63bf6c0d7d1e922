package slots

import (
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The sentences of DESIGN §3, byte for byte: hosts and drivers (and the
// models behind them) read these, so they are contract, not prose.

// absent is the one answer for a handle that is unknown, expired, answered
// already, or addressed to (or posted by) someone else: absent, never
// "forbidden", so a handle reveals nothing about who holds it.
func absent(id string) error {
	return status.Errorf(codes.NotFound,
		"no invocation %q is in flight; it was answered already, it expired, or this engine restarted since it was posted — the box may have run it; read the world before acting again", id)
}

// secondReader refuses a read while the client already holds one.
func secondReader(client string) error {
	return status.Errorf(codes.FailedPrecondition,
		"invocations: %q is already holding this engine's follow-class read — one machine's queue has one reader", client)
}

// inDoubt is the stderr of the capture the mailbox writes itself when an
// invocation reaches the hand-off cap.
func inDoubt(client string, handoffs int32) string {
	return fmt.Sprintf("this invocation was handed to %q %d times and never answered; each hand-off may have run it; read the world before acting again", client, handoffs)
}

// rehandedPrefix heads the stderr of a capture that arrives after two or
// more hand-offs.
func rehandedPrefix(client string, handoffs int32) string {
	return fmt.Sprintf("this invocation was handed to %q %d times; each hand-off may have run it, so what this capture reports may be the effect of more than one run; read the world before acting again", client, handoffs)
}

// cancelledStderr is the stderr of a cancelled invocation's capture.
func cancelledStderr(id, reason string) string {
	s := fmt.Sprintf("invocation %q was cancelled by its poster before it was answered", id)
	if reason != "" {
		s += ": " + reason
	}
	return s
}

// errShuttingDown refuses acts on a box that is closing.
var errShuttingDown = status.Error(codes.Unavailable, "the mailbox is shutting down; try again once it is back")
