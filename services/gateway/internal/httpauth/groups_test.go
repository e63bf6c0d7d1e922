package httpauth

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/switchboard-run/switchboard/kit/suite/identity"
)

// groupsOAuth stands in for the OAuth checker: it takes every token and
// says the token carries groups. The real checker's claim mapping is
// tested in internal/oauth; here what matters is where the groups go.
type groupsOAuth struct{ groups []string }

func (g groupsOAuth) Takes(string) bool { return true }
func (g groupsOAuth) Authenticate(*http.Request, string) (identity.Identity, []string, error) {
	ws := identity.AllWorkspaces()
	return identity.Identity{Name: "agent", Grade: identity.Driver, Workspaces: &ws}, g.groups, nil
}
func (g groupsOAuth) Challenge(*http.Request, error) string { return "Bearer" }

// An OAuth token's groups limit the caller as a token minted with groups
// does: they land in the identity every group check reads.
func TestOAuthGroupsLimitTheIdentity(t *testing.T) {
	for name, groups := range map[string][]string{"with groups": {"readonly"}, "without": nil} {
		t.Run(name, func(t *testing.T) {
			var got identity.Identity
			h := Resolver{OAuth: groupsOAuth{groups}}.Middleware(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				got, _ = identity.FromContext(r.Context())
			}))
			r := httptest.NewRequest(http.MethodPost, "/mcp/default", nil)
			r.Header.Set(HeaderAuthorization, "Bearer eyJ.a.b")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != http.StatusOK || got.Name != "agent" || !slices.Equal(got.Groups, groups) {
				t.Fatalf("HTTP %d, identity %+v; want agent limited to %v", w.Code, got, groups)
			}
		})
	}
}
