package contract

import (
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/status"
)

// ErrorDomain names the mailbox in the google.rpc.ErrorInfo of a refusal
// other services act on: they read its reason, never its sentence.
const ErrorDomain = "mailbox.switchboard.run"

// ReasonSecondReader marks a read refused because the client's queue is
// read already (one machine's queue has one reader).
const ReasonSecondReader = "SECOND_READER"

// ReasonShuttingDown marks an act a replica refused without doing any of
// it because it is shutting down: a post refused so was not posted, and
// another replica may be asked at once (NotPosted).
const ReasonShuttingDown = "SHUTTING_DOWN"

// Refusal is st with an ErrorInfo naming reason.
func Refusal(st *status.Status, reason string) error {
	if withInfo, err := st.WithDetails(&errdetails.ErrorInfo{Domain: ErrorDomain, Reason: reason}); err == nil {
		return withInfo.Err()
	}
	return st.Err()
}

// ReasonOf is the mailbox's reason for refusal err; "" for any other error.
func ReasonOf(err error) string {
	st, ok := status.FromError(err)
	if !ok {
		return ""
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == ErrorDomain {
			return info.GetReason()
		}
	}
	return ""
}

// NotPosted reports whether err refused an Invoke or Call before anything
// was posted, so that asking again cannot run the tool twice.
func NotPosted(err error) bool { return ReasonOf(err) == ReasonShuttingDown }
