package mailbox

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// FuzzCheckTimeout checks that any timeout a driver sends is either a
// positive duration within --ttl, taken, or refused INVALID_ARGUMENT with a
// sentence that names it; never a panic.
func FuzzCheckTimeout(f *testing.F) {
	for _, seed := range []struct {
		s int64
		n int32
	}{{1, 0}, {0, 1}, {0, 0}, {-1, 0}, {3600, 0}, {3601, 0}, {1, -1}, {-1, 1}, {0, 1_000_000_000}, {315_576_000_001, 0}, {-9223372036854775808, -999_999_999}} {
		f.Add(seed.s, seed.n)
	}
	s := &Service{bounds: Bounds{TTL: time.Hour}}
	f.Fuzz(func(t *testing.T, seconds int64, nanos int32) {
		d := &durationpb.Duration{Seconds: seconds, Nanos: nanos}
		err := s.checkTimeout(d)
		if err == nil {
			if d.CheckValid() != nil || d.AsDuration() <= 0 || d.AsDuration() > time.Hour {
				t.Fatalf("took the timeout %d s %d ns", seconds, nanos)
			}
			return
		}
		if status.Code(err) != codes.InvalidArgument || !strings.HasPrefix(status.Convert(err).Message(), "invoke: timeout ") {
			t.Fatalf("refused %d s %d ns with %v", seconds, nanos, err)
		}
	})
}
