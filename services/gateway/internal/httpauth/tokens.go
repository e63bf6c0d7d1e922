package httpauth

import (
	"context"
	"net/http"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/services/gateway/internal/httperr"
)

// RegistryTokens checks bearer tokens with RegistryService.AuthenticateToken
// on every request: revocation takes effect at once, so nothing is cached.
type RegistryTokens struct {
	// Registry is the registry's client.
	Registry registryv1.RegistryServiceClient
	// Self is the gateway itself: the check is the gateway's own call, made
	// with its service identity, never on behalf of the bearer.
	Self identity.Self
}

// Authenticate returns the token's identity, with the workspaces it may
// see stated (the gateway states them on every call it makes for the
// bearer). The registry's refusal (such as "unknown or revoked token", or
// an expired token's sentence, UNAUTHENTICATED) is returned unchanged.
func (t RegistryTokens) Authenticate(ctx context.Context, secret string) (identity.Identity, error) {
	res, err := t.Registry.AuthenticateToken(t.Self.AsSelf(ctx), &registryv1.AuthenticateTokenRequest{Secret: secret})
	if err != nil {
		return identity.Identity{}, err
	}
	if err := identity.CheckName(res.GetIdentity()); err != nil {
		return identity.Identity{}, httperr.New(http.StatusUnauthorized, "the token's %v", err)
	}
	grade, err := identity.ParseGrade(res.GetGrade())
	if err != nil || grade == identity.Service {
		// A token stands for a person or a host; only certificates make
		// services, so a service-grade token is refused rather than honoured.
		return identity.Identity{}, httperr.New(http.StatusUnauthorized,
			"the token of %q carries grade %q; a token may only be host, driver or admin", res.GetIdentity(), res.GetGrade())
	}
	ws, err := identity.ParseWorkspaces(res.GetWorkspaces())
	if err != nil {
		return identity.Identity{}, httperr.New(http.StatusUnauthorized, "the token of %q names workspaces the gateway cannot read: %v", res.GetIdentity(), err)
	}
	// Groups limit the bearer to some tool groups; the gateway enforces
	// them (docs/security.md), so they are not checked again here.
	return identity.Identity{Name: res.GetIdentity(), Grade: grade, Workspaces: &ws, Groups: res.GetGroups()}, nil
}
