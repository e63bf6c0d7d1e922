package oauth

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/services/gateway/internal/httperr"
)

// MetadataPrefix is where the protected-resource metadata lives (RFC 9728
// §3.1): the metadata of /mcp/dev is at MetadataPrefix + "/mcp/dev".
const MetadataPrefix = "/.well-known/oauth-protected-resource"

// Server checks access tokens for the MCP endpoint.
type Server struct {
	cfg     Config
	client  *http.Client
	issuers map[string]*issuer
	now     func() time.Time
}

// New checks cfg and returns its server. client fetches discovery
// documents, keys and introspection answers (nil: a client with a 10 s
// timeout). No issuer is contacted yet: each is discovered on the first
// token it issued, so the gateway starts while a provider is away.
func New(cfg Config, client *http.Client) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	s := &Server{cfg: cfg, client: client, issuers: map[string]*issuer{}, now: time.Now}
	for _, iss := range cfg.Issuers {
		s.issuers[iss] = &issuer{url: iss, client: client, maxAge: cfg.KeyMaxAge, now: s.now}
	}
	return s, nil
}

// Takes reports whether a bearer token is one for this server to check:
// every token but the Switchboard registry's own (prefix sbt_), which keep
// working beside OAuth.
func (s *Server) Takes(token string) bool { return !strings.HasPrefix(token, "sbt_") }

// Resource is the resource URI of the endpoint r addresses.
func (s *Server) Resource(r *http.Request) string { return s.cfg.Resource + r.URL.Path }

// workspace is the workspace the endpoint serves: its path value, or the
// default one for /mcp.
func workspace(r *http.Request) string {
	if ws := r.PathValue("workspace"); ws != "" {
		return ws
	}
	return DefaultWorkspace
}

// DefaultWorkspace is the workspace /mcp serves (mcpserve.DefaultWorkspace;
// repeated here so this package needs nothing of mcpserve).
const DefaultWorkspace = "default"

// Authenticate checks token for the endpoint r addresses and returns the
// identity it stands for: the name from the configured claim, the grade and
// workspaces from its scopes. The token must be for this endpoint's
// resource (or the gateway's), and grant the workspace the endpoint serves.
func (s *Server) Authenticate(r *http.Request, token string) (identity.Identity, []string, error) {
	id, c, err := s.authenticate(r, token)
	if err != nil {
		return identity.Identity{}, nil, err
	}
	return id, s.groups(c), nil
}

func (s *Server) authenticate(r *http.Request, token string) (identity.Identity, claims, error) {
	var c claims
	var err error
	switch {
	case looksLikeJWT(token):
		c, err = s.verifyJWT(r.Context(), token)
	case s.cfg.Introspection.URL != "":
		c, err = s.introspect(r.Context(), token)
	default:
		err = invalid("the access token is not a JWT, and this gateway introspects no opaque tokens")
	}
	if errors.Is(err, errUnreachable) {
		return identity.Identity{}, c, httperr.New(http.StatusServiceUnavailable, "%s", strings.TrimPrefix(err.Error(), errUnreachable.Error()+": "))
	}
	if err != nil {
		return identity.Identity{}, c, err
	}
	resource := s.Resource(r)
	if !oauthex.MatchesResource(c.Audience, resource) && !oauthex.MatchesResource(c.Audience, s.cfg.Resource) {
		return identity.Identity{}, c, invalid("the access token is for %s, not this endpoint: ask %s for a token with resource=%s",
			quoteList(c.Audience), c.Issuer, resource)
	}
	name, _ := c.Raw[s.cfg.NameClaim].(string)
	if err := identity.CheckName(name); err != nil {
		return identity.Identity{}, c, invalid("the access token's %q claim names no caller: %v", s.cfg.NameClaim, err)
	}
	grade, ok := s.cfg.grade(c.Scopes)
	if !ok {
		return identity.Identity{}, c, insufficient(s.scopeHint(r),
			"the access token of %q grants neither %q nor %q: the MCP endpoint serves drivers and admins", name, s.cfg.DriverScope, s.cfg.AdminScope)
	}
	ws, err := s.cfg.workspaces(c.Scopes)
	if err != nil {
		return identity.Identity{}, c, invalid("the access token's workspace scopes: %v", err)
	}
	if w := workspace(r); !ws.Sees(w) {
		return identity.Identity{}, c, insufficient(s.scopeHint(r),
			"the access token of %q grants no scope %q for this endpoint's workspace", name, s.cfg.WorkspaceScope+w)
	}
	return identity.Identity{Name: name, Grade: grade, Workspaces: &ws}, c, nil
}

// groups reads the configured groups claim of a checked token's claims;
// they limit the caller to those tool groups, as a token's groups do.
func (s *Server) groups(c claims) []string {
	if s.cfg.GroupsClaim == "" {
		return nil
	}
	g := strings_(c.Raw[s.cfg.GroupsClaim])
	if len(g) > MaxGroups {
		g = g[:MaxGroups]
	}
	return g
}

// scopeHint is the scope a token for r's endpoint needs.
func (s *Server) scopeHint(r *http.Request) string {
	return s.cfg.DriverScope + " " + s.cfg.WorkspaceScope + workspace(r)
}

// Challenge is the WWW-Authenticate value for a refusal of r (RFC 6750
// §3, RFC 9728 §5.1): where the metadata is, the scope a token needs, and,
// when a token was refused, why.
func (s *Server) Challenge(r *http.Request, err error) string {
	b := new(strings.Builder)
	fmt.Fprintf(b, `Bearer resource_metadata=%q`, s.cfg.Resource+MetadataPrefix+r.URL.Path)
	var ref *Refusal
	scope := s.scopeHint(r)
	if errors.As(err, &ref) {
		fmt.Fprintf(b, `, error=%q, error_description=%q`, ref.Code, quotable(ref.Err.Sentence))
		if ref.Scope != "" {
			scope = ref.Scope
		}
	}
	fmt.Fprintf(b, `, scope=%q`, scope)
	return b.String()
}

// quotable keeps a sentence inside an RFC 9110 quoted string: no quotes,
// backslashes or control characters.
func quotable(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '"' || r == '\\' || r < 0x20 || r == 0x7f {
			return '\''
		}
		return r
	}, s)
}

func quoteList(l []string) string {
	if len(l) == 0 {
		return "no audience"
	}
	q := make([]string, len(l))
	for i, s := range l {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

// Metadata serves the protected-resource metadata of the endpoint whose
// path follows MetadataPrefix (route it at MetadataPrefix + "/mcp" and
// MetadataPrefix + "/mcp/{workspace}"). Anyone may read it: it names no
// more than the endpoint's URL, which the caller already holds.
func (s *Server) Metadata() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := strings.TrimPrefix(r.URL.Path, MetadataPrefix)
		scopes := []string{s.cfg.DriverScope, s.cfg.AdminScope}
		if ws := r.PathValue("workspace"); ws != "" || path == "/mcp" {
			scopes = append(scopes, s.cfg.WorkspaceScope+workspace(r))
		}
		md := oauthex.ProtectedResourceMetadata{
			Resource:               s.cfg.Resource + path,
			AuthorizationServers:   s.cfg.Issuers,
			ScopesSupported:        scopes,
			BearerMethodsSupported: []string{"header"},
			ResourceName:           "Switchboard MCP endpoint " + path,
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "public, max-age=3600")
		_ = json.NewEncoder(w).Encode(md)
	})
}
