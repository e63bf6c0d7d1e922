// Package hostguard keeps web pages away from the suite's HTTP listeners
// (docs/design.md §4): the gateway's every route, and each process's
// metrics and pprof listeners. A request is refused when its Host is not a
// name the listener answers to (DNS rebinding: a page whose name was
// rebound to 127.0.0.1 sends its own name) or its Origin is neither the
// listener itself nor allowed (a page of another site calling across
// origins). docs/security.md says what it guards and why.
package hostguard

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/switchboard-run/switchboard/kit/lib/listen"
)

// loopbackNames are the names every listener answers to: what curl, the
// CLI and a container's health check send.
var loopbackNames = []string{"localhost", "127.0.0.1", "::1"}

// Config is one listener's guard.
type Config struct {
	// Listen is the listener's address: its host is a name it answers to
	// (unless it is 0.0.0.0 or ::).
	Listen string
	// Hosts are more names it answers to; Origins the pages that may call
	// it besides its own.
	Hosts, Origins []string
	// Dev allows loopback names only: dev mode takes a caller's word for
	// who it is.
	Dev bool
	// What names the listener in a refusal ("this gateway").
	What string
	// HostsFlag and OriginsFlag are the flags that allow a name or an
	// origin, named in refusals; empty: none allows one.
	HostsFlag, OriginsFlag string
	// Refuse writes a refusal (nil: plain text).
	Refuse func(w http.ResponseWriter, status int, sentence string)
}

// Guard admits a request only from a name its listener answers to and,
// when it carries an Origin, from the listener's own origin or an allowed
// one. It runs before anything else looks at the request, credentials
// included.
type Guard struct {
	cfg     Config
	hosts   []string // lower case, without port or brackets
	origins []string // scheme://host[:port], lower case
}

// New returns the guard cfg describes: its listener answers to the
// loopback names, its listen host, and cfg.Hosts; pages of cfg.Origins may
// call it.
func New(cfg Config) (*Guard, error) {
	g := &Guard{cfg: cfg, hosts: slices.Clone(loopbackNames)}
	if g.cfg.Refuse == nil {
		g.cfg.Refuse = func(w http.ResponseWriter, status int, sentence string) { http.Error(w, sentence, status) }
	}
	if h, _, err := net.SplitHostPort(cfg.Listen); err == nil {
		if ip := net.ParseIP(h); h != "" && (ip == nil || !ip.IsUnspecified()) {
			g.add(strings.ToLower(h))
		}
	}
	for _, h := range cfg.Hosts {
		h = hostName(h)
		if h == "" {
			return nil, fmt.Errorf("%s: an empty name", cfg.HostsFlag)
		}
		if cfg.Dev && !loopback(h) {
			return nil, fmt.Errorf("%s: dev mode answers loopback names only, and %q is not one", cfg.HostsFlag, h)
		}
		g.add(h)
	}
	for _, o := range cfg.Origins {
		n, ok := origin(o)
		if !ok {
			return nil, fmt.Errorf("%s: %q is not an origin such as https://app.example.com", cfg.OriginsFlag, o)
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
			hint := "dev mode answers loopback names only"
			switch {
			case g.cfg.HostsFlag != "" && !g.cfg.Dev:
				hint = "add the name with " + g.cfg.HostsFlag
			case g.cfg.HostsFlag == "":
				hint = "it answers no other"
			}
			g.cfg.Refuse(w, http.StatusForbidden, fmt.Sprintf("%s does not answer to Host %q: it answers to %s (%s)",
				g.cfg.What, r.Host, strings.Join(g.hosts, ", "), hint))
			return
		}
		if values := r.Header.Values("Origin"); len(values) > 0 {
			o, ok := origin(values[0])
			sameOrigin := ok && strings.EqualFold(strings.TrimPrefix(strings.TrimPrefix(o, "http://"), "https://"), r.Host)
			if len(values) > 1 || !ok || (!sameOrigin && !slices.Contains(g.origins, o)) {
				allow := "no page of another origin may call it"
				if g.cfg.OriginsFlag != "" {
					allow = fmt.Sprintf("allow it with %s if a page there should call %s", g.cfg.OriginsFlag, g.cfg.What)
				}
				g.cfg.Refuse(w, http.StatusForbidden, fmt.Sprintf("%s refuses requests from Origin %q: %s",
					g.cfg.What, strings.Join(values, ", "), allow))
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
