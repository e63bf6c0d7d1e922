package bridge

import (
	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	"github.com/switchboard-run/switchboard/kit/identity"
)

// Policy opens every bridge method to operators only: mounting runs
// programs and holds credentials.
var Policy = identity.Policy{
	bridgev1.BridgeService_Mount_FullMethodName:       {identity.Operator},
	bridgev1.BridgeService_Unmount_FullMethodName:     {identity.Operator},
	bridgev1.BridgeService_ListServers_FullMethodName: {identity.Operator},
}
