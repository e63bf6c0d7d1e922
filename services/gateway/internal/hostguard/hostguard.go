// Package hostguard keeps web pages away from the gateway (docs/design.md
// §4): every HTTP route refuses a Host the gateway does not answer to (DNS
// rebinding: a page whose name was rebound to 127.0.0.1 sends its own name)
// and an Origin that is neither the gateway itself nor allowed (a page of
// another site calling across origins). docs/security.md says
// what it guards and why.
package hostguard

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/switchboard-run/switchboard/kit/listen"
	"github.com/switchboard-run/switchboard/services/gateway/internal/httperr"
)

// Flag names, for the sentences that say how to allow a name or an origin.
const (
	HostsFlag   = "--http-hosts"
	OriginsFlag = "--http-origins"
)

// loopbackNames are the names every gateway answers to: what curl, the CLI
// and a container's health check send.
var loopbackNames = []string{"localhost", "127.0.0.1", "::1"}

// Guard admits a request only from a name this gateway answers to and,
// when it carries an Origin, from the gateway's own origin or an allowed
// one. It runs before anything else looks at the request, credentials
// included.
type Guard struct {
	hosts   []string // lower case, without port or brackets
	origins []string // scheme://host[:port], lower case
	dev     bool
}

// New returns the guard of a gateway listening on listen, answering to the
// loopback names, the listen host, and hosts; pages of origins may call it.
// In dev mode every name must be a loopback one, since dev mode takes a
// caller's word for who it is.
func New(listenAddr string, hosts, origins []string, dev bool) (*Guard, error) {
	g := &Guard{hosts: slices.Clone(loopbackNames), dev: dev}
	if h, _, err := net.SplitHostPort(listenAddr); err == nil {
		if ip := net.ParseIP(h); h != "" && (ip == nil || !ip.IsUnspecified()) {
			g.add(strings.ToLower(h))
		}
	}
	for _, h := range hosts {
		h = hostName(h)
		if h == "" {
			return nil, fmt.Errorf("%s: an empty name", HostsFlag)
		}
		if dev && !loopback(h) {
			return nil, fmt.Errorf("%s: dev mode answers loopback names only, and %q is not one", HostsFlag, h)
		}
		g.add(h)
	}
	for _, o := range origins {
		n, ok := origin(o)
		if !ok {
			return nil, fmt.Errorf("%s: %q is not an origin such as https://app.example.com", OriginsFlag, o)
		}
		g.origins = append(g.origins, n)
	}
	return g, nil
}

func (g *Guard) add(h string) {
	if !slices.Contains(g.hosts, h) {
		g.hosts = append(g.hosts, h)
	}
}

// Wrap refuses, with 403 and a sentence naming the value, what the guard
// forbids, and passes the rest to next.
func (g *Guard) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h := hostName(r.Host); !slices.Contains(g.hosts, h) {
			hint := "add the name with " + HostsFlag
			if g.dev {
				hint = "dev mode answers loopback names only"
			}
			httperr.Write(w, http.StatusForbidden, fmt.Sprintf("this gateway does not answer to Host %q: it answers to %s (%s)",
				r.Host, strings.Join(g.hosts, ", "), hint))
			return
		}
		if values := r.Header.Values("Origin"); len(values) > 0 {
			o, ok := origin(values[0])
			sameOrigin := ok && strings.EqualFold(strings.TrimPrefix(strings.TrimPrefix(o, "http://"), "https://"), r.Host)
			if len(values) > 1 || !ok || (!sameOrigin && !slices.Contains(g.origins, o)) {
				httperr.Write(w, http.StatusForbidden, fmt.Sprintf(
					"this gateway refuses requests from Origin %q: allow it with %s if a page there should call this gateway",
					strings.Join(values, ", "), OriginsFlag))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// hostName is a Host header's name: lower case, without port, brackets or
// a trailing dot.
func hostName(hostport string) string {
	h := hostport
	if name, _, err := net.SplitHostPort(hostport); err == nil {
		h = name
	}
	h = strings.TrimSuffix(strings.Trim(h, "[]"), ".")
	return strings.ToLower(h)
}

// loopback reports whether a browser reaches h only on this machine: the
// loopback names and IPs, and names under .localhost, which browsers
// resolve to loopback themselves (RFC 6761).
func loopback(h string) bool {
	return listen.IsLoopbackHost(h) || strings.HasSuffix(h, ".localhost")
}

// origin normalises an Origin value (scheme://host[:port], nothing else);
// "null" and anything with a path, a query or credentials are not origins.
func origin(s string) (string, bool) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", false
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), true
}
