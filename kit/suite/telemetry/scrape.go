package telemetry

import (
	"fmt"
	"net/http"

	"github.com/switchboard-run/switchboard/kit/suite/identity"
)

// MayScrape says whether id may read a process's metrics: a scraper (grade
// scrape, which may read nothing else) and admins. Metrics name
// workspaces, clients and tools, which a driver or a host of one workspace
// must not learn about the others; no suite service scrapes another
// (docs/security.md).
func MayScrape(id identity.Identity) bool {
	return id.Grade == identity.Scrape || id.Grade == identity.Admin
}

// Refusal is what a caller who may not scrape is told.
func Refusal(id identity.Identity) string {
	return fmt.Sprintf("%s is %s; metrics are served to a scraper (a certificate or token of grade scrape) or an admin", id.Name, id.Grade.Article())
}

// Scrapers serves h only to callers whose verified client certificate
// names a grade that MayScrape: the guard of a --metrics-addr listener
// outside dev mode.
func Scrapers(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
			http.Error(w, "metrics are served to a client certificate signed by the suite's CA, of grade scrape or admin", http.StatusUnauthorized)
			return
		}
		id, err := identity.FromCertificate(r.TLS.VerifiedChains[0][0])
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		if !MayScrape(id) {
			http.Error(w, Refusal(id), http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}
