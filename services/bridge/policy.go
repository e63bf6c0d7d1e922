package bridge

import (
	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	"github.com/switchboard-run/switchboard/kit/identity"
)

// Policy opens mounting to admins only — a mount runs programs and holds
// credentials — and listing to drivers and admins (docs/security.md).
var Policy = identity.Policy{
	bridgev1.BridgeService_Mount_FullMethodName:       {identity.Admin},
	bridgev1.BridgeService_Unmount_FullMethodName:     {identity.Admin},
	bridgev1.BridgeService_ListServers_FullMethodName: {identity.Driver, identity.Admin},
}
