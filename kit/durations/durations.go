// Package durations checks the google.protobuf.Duration fields callers send
// (a timeout, a per-call deadline, a ping interval) with a sentence that
// names the value. The protobuf library's own message prints the value in
// its text format, whose spacing it varies on purpose, so it is neither a
// stable sentence nor one to show.
package durations

import (
	"fmt"

	"google.golang.org/protobuf/types/known/durationpb"
)

// Valid refuses a duration the protobuf rules reject; name is the field,
// the sentence's subject.
func Valid(name string, d *durationpb.Duration) error {
	if d.CheckValid() == nil {
		return nil
	}
	return fmt.Errorf("%s (%d seconds, %d nanos) is not a valid duration: seconds and nanos must share one sign, and nanos stay within a second",
		name, d.GetSeconds(), d.GetNanos())
}
