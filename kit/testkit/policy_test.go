package testkit

import (
	"slices"
	"testing"

	"google.golang.org/grpc"

	"github.com/switchboard-run/switchboard/kit/suite/identity"
)

var echoDesc = grpc.ServiceDesc{
	ServiceName: "test.Echo",
	Methods:     []grpc.MethodDesc{{MethodName: "Say"}},
	Streams:     []grpc.StreamDesc{{StreamName: "Follow"}},
}

func TestPolicyGapsNameMissingAndStrayEntries(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name           string
		policy         identity.Policy
		missing, extra []string
	}{
		{"every method and stream covered", identity.Policy{"/test.Echo/Say": identity.Any, "/test.Echo/Follow": nil}, nil, nil},
		{"a stream left out", identity.Policy{"/test.Echo/Say": identity.Any}, []string{"/test.Echo/Follow"}, nil},
		{"an entry for a method that is gone", identity.Policy{"/test.Echo/Say": identity.Any, "/test.Echo/Follow": identity.Any,
			"/test.Echo/Shout": identity.Any}, nil, []string{"/test.Echo/Shout"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			missing, extra := PolicyGaps(tc.policy, &echoDesc)
			if !slices.Equal(missing, tc.missing) || !slices.Equal(extra, tc.extra) {
				t.Fatalf("missing %v extra %v, want %v and %v", missing, extra, tc.missing, tc.extra)
			}
		})
	}
}
