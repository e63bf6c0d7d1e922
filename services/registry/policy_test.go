package registry_test

import (
	"testing"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/registry"
)

func TestPolicyNamesEveryRPCAndNoOther(t *testing.T) {
	t.Parallel()
	testkit.CheckPolicy(t, registry.Policy, &registryv1.RegistryService_ServiceDesc, &registryv1.AuditService_ServiceDesc)
}
