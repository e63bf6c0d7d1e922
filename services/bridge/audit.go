package bridge

import (
	"context"
	"strings"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
)

// act records a mount or unmount of client in the audit trail
// (docs/security.md, "Audit"), in the first workspace the client sits in
// when it sits in one.
func (s *Service) act(ctx context.Context, action, client, detail string) {
	id, _ := identity.Caller(ctx)
	s.audit.Record(&registryv1.AuditEvent{Actor: id.Name, Workspace: s.view.WorkspaceOf(client), Action: action, Target: client, Detail: detail})
}

// describe is what a mount runs, in a few words: never a header's or an
// environment variable's value.
func describe(cfg *bridgev1.ServerConfig) string {
	switch t := cfg.GetTransport().(type) {
	case *bridgev1.ServerConfig_Stdio:
		return "stdio " + strings.Join(append([]string{t.Stdio.GetCommand()}, t.Stdio.GetArgs()...), " ")
	case *bridgev1.ServerConfig_Http:
		return "http " + t.Http.GetUrl()
	case *bridgev1.ServerConfig_Plugin:
		return "plugin " + strings.Join(t.Plugin.GetCommand(), " ")
	case *bridgev1.ServerConfig_Openapi:
		return "openapi " + t.Openapi.GetSpecUrl()
	}
	return ""
}
