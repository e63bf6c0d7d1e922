package registry

import (
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/identity"
)

// Policy is which grades may call each RegistryService method (docs/design.md §4).
// Tool hosts may only advertise; reading is for operators and the suite's
// services; the mailbox alone reports presence and the gateway alone
// authenticates tokens.
var Policy = identity.Policy{
	registryv1.RegistryService_Advertise_FullMethodName:         {identity.Host, identity.Operator, identity.Service},
	registryv1.RegistryService_ListClients_FullMethodName:       {identity.Operator, identity.Service},
	registryv1.RegistryService_ListTools_FullMethodName:         {identity.Operator, identity.Service},
	registryv1.RegistryService_ResolveTool_FullMethodName:       {identity.Operator, identity.Service},
	registryv1.RegistryService_GetClient_FullMethodName:         {identity.Operator, identity.Service},
	registryv1.RegistryService_WatchTools_FullMethodName:        {identity.Operator, identity.Service},
	registryv1.RegistryService_RegisterClient_FullMethodName:    {identity.Operator},
	registryv1.RegistryService_UnregisterClient_FullMethodName:  {identity.Operator},
	registryv1.RegistryService_CreateToken_FullMethodName:       {identity.Operator},
	registryv1.RegistryService_ListTokens_FullMethodName:        {identity.Operator},
	registryv1.RegistryService_RevokeToken_FullMethodName:       {identity.Operator},
	registryv1.RegistryService_AuthenticateToken_FullMethodName: {identity.Service},
}
