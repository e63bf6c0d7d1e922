package registry

import (
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
)

// Grade sets of the policy below.
var (
	readers = []identity.Grade{identity.Driver, identity.Admin, identity.Service}
	admins  = []identity.Grade{identity.Admin}
)

// Policy is which grades may call each RegistryService method
// (docs/design.md §4, docs/security.md): tool hosts only advertise;
// drivers, admins and the suite's services read, each within the
// workspaces it may see; admins alone change memberships, tokens and
// grants; the gateway alone authenticates tokens. A service may read one
// grant: the gateway, the mailbox and the bridge act for certificate
// drivers and must know what those may see (the mailbox and the bridge
// hear every grant on WatchTools anyway).
var Policy = identity.Policy{
	registryv1.RegistryService_Advertise_FullMethodName:         {identity.Host},
	registryv1.RegistryService_ListClients_FullMethodName:       readers,
	registryv1.RegistryService_ListTools_FullMethodName:         readers,
	registryv1.RegistryService_ResolveTool_FullMethodName:       readers,
	registryv1.RegistryService_GetClient_FullMethodName:         readers,
	registryv1.RegistryService_WatchTools_FullMethodName:        readers,
	registryv1.RegistryService_RegisterClient_FullMethodName:    admins,
	registryv1.RegistryService_UnregisterClient_FullMethodName:  admins,
	registryv1.RegistryService_CreateToken_FullMethodName:       admins,
	registryv1.RegistryService_ListTokens_FullMethodName:        admins,
	registryv1.RegistryService_RevokeToken_FullMethodName:       admins,
	registryv1.RegistryService_SetGrant_FullMethodName:          admins,
	registryv1.RegistryService_GetGrant_FullMethodName:          {identity.Admin, identity.Service},
	registryv1.RegistryService_ListGrants_FullMethodName:        admins,
	registryv1.RegistryService_DeleteGrant_FullMethodName:       admins,
	registryv1.RegistryService_AuthenticateToken_FullMethodName: {identity.Service},
	registryv1.RegistryService_SetGroup_FullMethodName:          admins,
	registryv1.RegistryService_GetGroup_FullMethodName:          readers,
	registryv1.RegistryService_ListGroups_FullMethodName:        readers,
	registryv1.RegistryService_DeleteGroup_FullMethodName:       admins,
	registryv1.RegistryService_ListPins_FullMethodName:          readers,
	registryv1.RegistryService_ApprovePin_FullMethodName:        admins,
	registryv1.RegistryService_RejectPin_FullMethodName:         admins,
	registryv1.RegistryService_SetPinPolicy_FullMethodName:      admins,
	registryv1.RegistryService_GetPinPolicy_FullMethodName:      readers,
	registryv1.AuditService_ListAudit_FullMethodName:            {identity.Driver, identity.Admin},
	registryv1.AuditService_FollowAudit_FullMethodName:          {identity.Driver, identity.Admin},
	registryv1.AuditService_SetAuditPolicy_FullMethodName:       admins,
	registryv1.AuditService_GetAuditPolicy_FullMethodName:       readers,
}
