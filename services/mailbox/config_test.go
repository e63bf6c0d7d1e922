package mailbox

import (
	"strings"
	"testing"
)

// TestBoundsThatCouldNotServeAnInvocationAreRefused: a read batch must
// carry one invocation at the input bound and stay under the message
// limit, and every budget must hold one.
func TestBoundsThatCouldNotServeAnInvocationAreRefused(t *testing.T) {
	if err := (Bounds{}).withDefaults().check(); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
	for _, tt := range []struct {
		name string
		b    Bounds
		want string
	}{
		{"a batch smaller than an input", Bounds{MaxReadBytes: 1 << 20}, "--max-read-bytes 1048576 cannot carry one invocation at --max-input-bytes 1048576: raise it to 1053696 or more"},
		{"a batch over half a message", Bounds{MaxReadBytes: 9 << 20}, "--max-read-bytes 9437184 is over half the 16777216-byte gRPC message limit"},
		{"a poster budget under an input", Bounds{MaxPosterBytes: 1 << 10}, "--max-poster-bytes 1024 is below --max-input-bytes 1048576: no invocation at that bound could be posted"},
		{"no rows", Bounds{MaxReadRows: -1}, "--max-read-rows -1: a read hands out at least one invocation"},
	} {
		err := tt.b.withDefaults().check()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v; want %q", tt.name, err, tt.want)
		}
	}
}
