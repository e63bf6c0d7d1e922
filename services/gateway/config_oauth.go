package gateway

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-run/switchboard/kit/suite/envflag"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/services/gateway/internal/limits"
	"github.com/switchboard-run/switchboard/services/gateway/internal/oauth"
)

// OAuthFlags configure the MCP endpoint as an OAuth 2.1 resource server.
type OAuthFlags struct {
	Issuers, Resource                       string
	NameClaim, GroupsClaim                  string
	DriverScope, AdminScope, WorkspaceScope string
	IntrospectionURL, IntrospectionClientID string
	IntrospectionSecretFile                 string
	KeyMaxAge                               time.Duration
}

// Register adds the --oauth-* flags.
func (o *OAuthFlags) Register(fs *flag.FlagSet) {
	fs.StringVar(&o.Issuers, "oauth-issuers", "",
		"comma-separated issuer URLs whose OAuth access tokens the MCP endpoint accepts (empty: no OAuth; Switchboard tokens, certificates and dev headers work either way)")
	fs.StringVar(&o.Resource, "oauth-resource", "",
		"the gateway's public base URL (https://gw.example.com); the resource of /mcp/{workspace} is this URL and the path, and a token's aud must name either")
	fs.StringVar(&o.NameClaim, "oauth-name-claim", oauth.DefaultNameClaim, "the access token claim whose value is the caller's identity name")
	fs.StringVar(&o.GroupsClaim, "oauth-groups-claim", "", "the access token claim holding the caller's groups, carried with the request (empty: none)")
	fs.StringVar(&o.DriverScope, "oauth-driver-scope", oauth.DefaultDriverScope, "the scope that makes the bearer a driver")
	fs.StringVar(&o.AdminScope, "oauth-admin-scope", oauth.DefaultAdminScope, "the scope that makes the bearer an admin")
	fs.StringVar(&o.WorkspaceScope, "oauth-workspace-scope", oauth.DefaultWorkspaceScope,
		"the prefix of the scopes naming workspaces: <prefix>dev grants workspace dev, <prefix>* every workspace")
	fs.StringVar(&o.IntrospectionURL, "oauth-introspection-url", "", "an RFC 7662 endpoint that checks opaque (non-JWT) access tokens (empty: JWTs only)")
	fs.StringVar(&o.IntrospectionClientID, "oauth-introspection-client-id", "", "the client id the gateway introspects with")
	fs.StringVar(&o.IntrospectionSecretFile, "oauth-introspection-secret-file", "", "a file holding the introspection client's secret")
	fs.DurationVar(&o.KeyMaxAge, "oauth-key-max-age", oauth.DefaultKeyMaxAge,
		"fetch an issuer's signing keys again once they are this old (a token naming an unknown key fetches them at once)")
}

// Config is the oauth package's configuration, or ok false when no issuer
// is named.
func (o OAuthFlags) Config() (cfg oauth.Config, ok bool, err error) {
	issuers := envflag.List(o.Issuers)
	if len(issuers) == 0 {
		if o.Resource != "" || o.IntrospectionURL != "" {
			return cfg, false, fmt.Errorf("--oauth-resource and --oauth-introspection-url need --oauth-issuers")
		}
		return cfg, false, nil
	}
	cfg = oauth.Config{Issuers: issuers, Resource: o.Resource, NameClaim: o.NameClaim, GroupsClaim: o.GroupsClaim,
		DriverScope: o.DriverScope, AdminScope: o.AdminScope, WorkspaceScope: o.WorkspaceScope, KeyMaxAge: o.KeyMaxAge,
		Introspection: oauth.Introspection{URL: o.IntrospectionURL, ClientID: o.IntrospectionClientID}}
	if o.IntrospectionSecretFile != "" {
		b, err := os.ReadFile(o.IntrospectionSecretFile)
		if err != nil {
			return cfg, false, fmt.Errorf("--oauth-introspection-secret-file: %w", err)
		}
		cfg.Introspection.ClientSecret = strings.TrimSpace(string(b))
	}
	return cfg, true, nil
}

// LimitFlags are the per-caller limits on the call routes.
type LimitFlags struct {
	Rate, Burst, Concurrent string
	MaxCallers              int
}

// Register adds the --call-* flags.
func (l *LimitFlags) Register(fs *flag.FlagSet) {
	fs.StringVar(&l.Rate, "call-rate", "",
		"calls per second one identity may make: a number for every grade, or grade=number pairs (driver=5,admin=20); empty or 0: no rate limit")
	fs.StringVar(&l.Burst, "call-burst", "", "how many calls one identity may make at once above its rate: a number, or grade=number pairs (default: the rate, at least 1)")
	fs.StringVar(&l.Concurrent, "call-concurrency", "",
		"calls one identity may have in flight at once: a number, or grade=number pairs; empty or 0: no limit")
	fs.IntVar(&l.MaxCallers, "call-limit-callers", limits.DefaultMaxCallers,
		"how many identities the limits are tracked for at once (about 200 bytes each); the one idle the longest makes room")
}

// Config is the limits package's configuration.
func (l LimitFlags) Config() (limits.Config, error) {
	rates, err := perGrade("--call-rate", l.Rate)
	if err != nil {
		return limits.Config{}, err
	}
	bursts, err := perGrade("--call-burst", l.Burst)
	if err != nil {
		return limits.Config{}, err
	}
	concs, err := perGrade("--call-concurrency", l.Concurrent)
	if err != nil {
		return limits.Config{}, err
	}
	cfg := limits.Config{Grades: map[identity.Grade]limits.Limit{}, MaxCallers: l.MaxCallers}
	for _, g := range identity.Grades {
		lim := limits.Limit{Rate: rates[g], Burst: int(bursts[g]), Concurrent: int(concs[g])}
		if lim.Burst == 0 {
			lim.Burst = max(1, int(lim.Rate))
		}
		if lim.Rate > 0 || lim.Concurrent > 0 {
			cfg.Grades[g] = lim
		}
	}
	return cfg, nil
}

// perGrade reads "5" (every grade) or "driver=5,admin=20".
func perGrade(flagName, s string) (map[identity.Grade]float64, error) {
	out := map[identity.Grade]float64{}
	for _, item := range envflag.List(s) {
		gs, vs, paired := strings.Cut(item, "=")
		if !paired {
			gs, vs = "", item
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(vs), 64)
		if err != nil || v < 0 || v > 1e6 {
			return nil, fmt.Errorf("%s: %q is not a number from 0 to 1000000", flagName, vs)
		}
		if !paired {
			for _, g := range identity.Grades {
				out[g] = v
			}
			continue
		}
		g, err := identity.ParseGrade(strings.TrimSpace(gs))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", flagName, err)
		}
		out[g] = v
	}
	return out, nil
}
