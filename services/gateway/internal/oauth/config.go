// Package oauth makes the MCP endpoint an OAuth 2.1 resource server (the
// MCP authorization spec): it publishes the protected-resource metadata of
// each endpoint (RFC 9728), answers a caller without a token with a
// challenge that points at it, and turns an access token from a configured
// issuer into a Switchboard identity. A JWT is checked against the issuer's
// published keys (OIDC discovery, JWKS) with go-oidc; an opaque token, when
// configured, with the issuer's introspection endpoint (RFC 7662). The token
// itself goes no further than this package: the gateway strips it before the
// request reaches any handler (package httpauth).
package oauth

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/switchboard-run/switchboard/kit/suite/identity"
)

// Config says which tokens the endpoint accepts and what they grant.
type Config struct {
	// Issuers are the authorization servers whose tokens are accepted, as
	// their `iss` claim spells them (the OIDC discovery document is read at
	// <issuer>/.well-known/openid-configuration).
	Issuers []string
	// Resource is the gateway's public base URL (https://gw.example.com).
	// The resource of the endpoint /mcp/{workspace} is Resource followed by
	// that path; a token's `aud` must name it, or Resource itself (RFC 8707).
	Resource string
	// NameClaim is the claim whose value is the caller's identity name
	// (default "sub").
	NameClaim string
	// GroupsClaim, when set, is a claim holding the caller's groups (a list
	// of strings); they limit the caller to those tool groups (identity.Groups).
	GroupsClaim string
	// DriverScope and AdminScope are the scopes that make the bearer a
	// driver or an admin (defaults "switchboard:driver" and
	// "switchboard:admin"); a token with neither is refused.
	DriverScope, AdminScope string
	// WorkspaceScope is the prefix of the scopes naming workspaces
	// (default "switchboard:workspace:"): "<prefix>dev" grants dev,
	// "<prefix>*" every workspace.
	WorkspaceScope string
	// Introspection, when URL is set, checks opaque (non-JWT) tokens with an
	// RFC 7662 endpoint, authenticating as ClientID/ClientSecret (HTTP Basic).
	Introspection Introspection
	// KeyMaxAge is how long fetched signing keys are trusted before they are
	// fetched again (default 10 minutes). A token signed by an unknown key
	// makes a fetch at once, so a new key is honoured without waiting; a
	// retired key is honoured no longer than this.
	KeyMaxAge time.Duration
}

// Introspection is the RFC 7662 endpoint for opaque tokens.
type Introspection struct {
	URL, ClientID, ClientSecret string
}

// Defaults of the scope and claim mapping.
const (
	DefaultNameClaim      = "sub"
	DefaultDriverScope    = "switchboard:driver"
	DefaultAdminScope     = "switchboard:admin"
	DefaultWorkspaceScope = "switchboard:workspace:"
	DefaultKeyMaxAge      = 10 * time.Minute
	// MaxIssuers bounds the configured issuers, MaxGroups a token's groups.
	MaxIssuers = 16
	MaxGroups  = 256
)

// withDefaults checks the configuration and fills its defaults.
func (c Config) withDefaults() (Config, error) {
	if len(c.Issuers) == 0 {
		return c, errors.New("oauth: name at least one issuer whose tokens the MCP endpoint accepts")
	}
	if len(c.Issuers) > MaxIssuers {
		return c, fmt.Errorf("oauth: %d issuers are named; at most %d", len(c.Issuers), MaxIssuers)
	}
	for _, iss := range c.Issuers {
		if err := checkURL("issuer", iss); err != nil {
			return c, err
		}
	}
	if err := checkURL("resource", c.Resource); err != nil {
		return c, err
	}
	c.Resource = strings.TrimSuffix(c.Resource, "/")
	if u, _ := url.Parse(c.Resource); u.RawQuery != "" || u.Fragment != "" {
		return c, fmt.Errorf("oauth: the resource %q may hold no query or fragment (RFC 8707)", c.Resource)
	}
	if c.NameClaim == "" {
		c.NameClaim = DefaultNameClaim
	}
	if c.DriverScope == "" {
		c.DriverScope = DefaultDriverScope
	}
	if c.AdminScope == "" {
		c.AdminScope = DefaultAdminScope
	}
	if c.WorkspaceScope == "" {
		c.WorkspaceScope = DefaultWorkspaceScope
	}
	if c.KeyMaxAge <= 0 {
		c.KeyMaxAge = DefaultKeyMaxAge
	}
	if c.Introspection.URL != "" {
		if err := checkURL("introspection endpoint", c.Introspection.URL); err != nil {
			return c, err
		}
		if c.Introspection.ClientID == "" {
			return c, errors.New("oauth: the introspection endpoint needs the client id the gateway authenticates with")
		}
	}
	return c, nil
}

// checkURL accepts https URLs, and http ones on loopback (a provider on the
// same machine, as in dev mode and the tests).
func checkURL(what, s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return fmt.Errorf("oauth: the %s %q is not an absolute URL", what, s)
	}
	switch {
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && isLoopback(u.Hostname()):
		return nil
	}
	return fmt.Errorf("oauth: the %s %q must be https (http only on loopback)", what, s)
}

func isLoopback(host string) bool {
	return host == "localhost" || host == "127.0.0.1" || host == "::1"
}

// grade is the grade the scopes grant: admin over driver, none without.
func (c Config) grade(scopes []string) (identity.Grade, bool) {
	var driver bool
	for _, s := range scopes {
		switch s {
		case c.AdminScope:
			return identity.Admin, true
		case c.DriverScope:
			driver = true
		}
	}
	if driver {
		return identity.Driver, true
	}
	return "", false
}

// workspaces are the workspaces the scopes name.
func (c Config) workspaces(scopes []string) (identity.Workspaces, error) {
	var names []string
	for _, s := range scopes {
		if ws, ok := strings.CutPrefix(s, c.WorkspaceScope); ok {
			if ws == identity.EveryWorkspace {
				return identity.AllWorkspaces(), nil
			}
			names = append(names, ws)
		}
	}
	return identity.ParseWorkspaces(names)
}
