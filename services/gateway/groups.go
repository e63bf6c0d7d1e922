package gateway

import (
	"net/http"

	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/suite/toolgroups"
	"github.com/switchboard-run/switchboard/services/gateway/internal/httperr"
)

// ungrouped refuses a caller limited to tool groups (a token minted with
// groups, docs/security.md) on a route that names no group: the REST
// routes would list and call every tool of its workspaces.
func ungrouped(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id, ok := identity.FromContext(r.Context()); ok && len(id.Groups) > 0 {
			httperr.Write(w, http.StatusForbidden, toolgroups.Limited(id.Name, id.Groups))
			return
		}
		next.ServeHTTP(w, r)
	})
}
