package registry

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/switchboard-run/switchboard/kit/suite/natsconn"
)

// A write NATS did not acknowledge may have landed, so its refusal must
// not say that nothing changed; a write NATS refused did not land.
func TestAStoreFailureSaysWhetherAnythingChanged(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("put: %w", natsconn.ErrNoAnswer), "so it cannot say whether this was stored; try again in a moment"},
		{errors.New("nats: connection closed"), "so nothing changed; try again in a moment"},
	} {
		err := storeFailed("advertise: storing the set of \"box\"", tc.err)
		if status.Code(err) != codes.Unavailable || !strings.Contains(status.Convert(err).Message(), tc.want) {
			t.Errorf("storeFailed(%v) = %v; want UNAVAILABLE saying %q", tc.err, err, tc.want)
		}
	}
}
