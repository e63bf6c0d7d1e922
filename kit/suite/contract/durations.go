package contract

import (
	"fmt"

	"google.golang.org/protobuf/types/known/durationpb"
)

// Valid refuses a duration the protobuf rules reject; name is the field,
// the sentence's subject.
func ValidDuration(name string, d *durationpb.Duration) error {
	if d.CheckValid() == nil {
		return nil
	}
	return fmt.Errorf("%s (%d seconds, %d nanos) is not a valid duration: seconds and nanos must share one sign, and nanos stay within a second",
		name, d.GetSeconds(), d.GetNanos())
}
