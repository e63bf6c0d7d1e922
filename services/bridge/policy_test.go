package bridge

import (
	"testing"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

func TestPolicyNamesEveryRPCAndNoOther(t *testing.T) {
	t.Parallel()
	testkit.CheckPolicy(t, Policy, &bridgev1.BridgeService_ServiceDesc)
}
