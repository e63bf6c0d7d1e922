package mcpserve

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/switchboard-run/switchboard/services/gateway/internal/httperr"
)

// loopbackNames are the names every gateway answers to.
var loopbackNames = []string{"localhost", "127.0.0.1", "::1"}

// Guard protects the MCP endpoint from DNS rebinding and from web pages of
// other origins (MCP's transport security rules): a request whose Host is
// not a name this gateway answers to, or whose Origin is neither the
// gateway itself nor an allowed origin, is refused with 403 before its
// credentials are even looked at.
type Guard struct {
	hosts   []string // lower case, without port or brackets
	origins []string // scheme://host[:port], lower case
	dev     bool
}

// NewGuard returns the guard of a gateway listening on listen, answering to
// the loopback names, the listen host, and hosts; pages of origins may call
// it. In dev mode every name must be a loopback one.
func NewGuard(listen string, hosts, origins []string, dev bool) (*Guard, error) {
	g := &Guard{hosts: slices.Clone(loopbackNames), dev: dev}
	if h, _, err := net.SplitHostPort(listen); err == nil {
		if ip := net.ParseIP(h); h != "" && (ip == nil || !ip.IsUnspecified()) {
			g.hosts = append(g.hosts, strings.ToLower(h))
		}
	}
	for _, h := range hosts {
		h = hostName(h)
		if h == "" {
			return nil, fmt.Errorf("--mcp-allowed-hosts: an empty name")
		}
		if dev && !isLoopback(h) {
			return nil, fmt.Errorf("--mcp-allowed-hosts: dev mode answers loopback names only, and %q is not one", h)
		}
		g.hosts = append(g.hosts, h)
	}
	for _, o := range origins {
		n, ok := origin(o)
		if !ok {
			return nil, fmt.Errorf("--mcp-allowed-origins: %q is not an origin such as https://app.example.com", o)
		}
		g.origins = append(g.origins, n)
	}
	return g, nil
}

// Wrap refuses what the guard forbids and passes the rest to next.
func (g *Guard) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h := hostName(r.Host); !slices.Contains(g.hosts, h) {
			hint := "add the name with --mcp-allowed-hosts"
			if g.dev {
				hint = "dev mode answers loopback names only"
			}
			httperr.Write(w, http.StatusForbidden, fmt.Sprintf("the MCP endpoint does not answer to Host %q: it answers to %s (%s)",
				r.Host, strings.Join(g.hosts, ", "), hint))
			return
		}
		if values := r.Header.Values("Origin"); len(values) > 0 {
			o, ok := origin(values[0])
			sameOrigin := ok && strings.EqualFold(strings.TrimPrefix(strings.TrimPrefix(o, "http://"), "https://"), r.Host)
			if len(values) > 1 || !ok || (!sameOrigin && !slices.Contains(g.origins, o)) {
				httperr.Write(w, http.StatusForbidden, fmt.Sprintf(
					"the MCP endpoint refuses requests from Origin %q: allow it with --mcp-allowed-origins if a page there should call this gateway",
					strings.Join(values, ", ")))
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

func isLoopback(h string) bool {
	if ip := net.ParseIP(h); ip != nil {
		return ip.IsLoopback()
	}
	return h == "localhost" || strings.HasSuffix(h, ".localhost")
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
