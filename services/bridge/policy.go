package bridge

import (
	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
)

// Policy opens mounting to admins only — a mount runs programs and holds
// credentials — and listing to drivers and admins (docs/security.md). The
// listings of resources and prompts, and their watch, are open to services
// too: the gateway's MCP endpoint lists them once, as itself, for every
// session of a workspace, as it lists tools. Reading a resource and getting
// a prompt are made on behalf of the MCP client that asked, so they take a
// driver or an admin, as ListServers does. An export shows how each server
// is run (commands, URLs, the names of its secrets): admins only.
var Policy = identity.Policy{
	bridgev1.BridgeService_Mount_FullMethodName:                 {identity.Admin},
	bridgev1.BridgeService_Unmount_FullMethodName:               {identity.Admin},
	bridgev1.BridgeService_ListServers_FullMethodName:           {identity.Driver, identity.Admin},
	bridgev1.BridgeService_ListResources_FullMethodName:         {identity.Driver, identity.Admin, identity.Service},
	bridgev1.BridgeService_ListResourceTemplates_FullMethodName: {identity.Driver, identity.Admin, identity.Service},
	bridgev1.BridgeService_ListPrompts_FullMethodName:           {identity.Driver, identity.Admin, identity.Service},
	bridgev1.BridgeService_WatchCatalog_FullMethodName:          {identity.Driver, identity.Admin, identity.Service},
	bridgev1.BridgeService_ReadResource_FullMethodName:          {identity.Driver, identity.Admin},
	bridgev1.BridgeService_GetPrompt_FullMethodName:             {identity.Driver, identity.Admin},
	bridgev1.BridgeService_Complete_FullMethodName:              {identity.Driver, identity.Admin},
	bridgev1.BridgeService_ExportServers_FullMethodName:         {identity.Admin},
}
