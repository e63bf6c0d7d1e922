// Package pinned is the bridge's HTTP client for an upstream that holds
// the bridge's own credentials (an MCP server's headers, an API's key): the
// credentials go to one origin only, a redirect to any other is refused,
// and a redirect within it keeps them (docs/security.md).
package pinned

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// maxRedirects bounds a chain of redirects within the origin, as Go's
// client does by default.
const maxRedirects = 10

// Credentials are what the bridge adds to every request to the origin.
type Credentials struct {
	// Headers are set on each request that does not set them already.
	Headers map[string]string
	// Query parameters are set on each request, replacing any of their names.
	Query map[string]string
}

// Client returns a client that sends creds to home's origin only and
// follows redirects only within it. what names the upstream in the
// refusal of a redirect ("this server", "this API"). Its connections are
// its own: closing its idle ones touches no other upstream's.
func Client(home *url.URL, creds Credentials, what string) *http.Client {
	origin := Origin(home)
	return &http.Client{
		Transport:     &withCredentials{creds: creds, origin: origin, base: http.DefaultTransport.(*http.Transport).Clone()},
		CheckRedirect: stayWithin(origin, what),
	}
}

// stayWithin follows a redirect only within the configured origin: the
// request carries the credentials, and its body a tool call's input,
// neither of which is for anyone else.
func stayWithin(home, what string) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if o := Origin(req.URL); o != home {
			return fmt.Errorf("%s redirected the bridge to %s, another origin: the bridge sends %s's credentials only to %s and follows no redirect elsewhere",
				via[len(via)-1].URL.Redacted(), req.URL.Redacted(), what, home)
		}
		if len(via) >= maxRedirects {
			return fmt.Errorf("%s redirected the bridge %d times; giving up", via[0].URL.Redacted(), len(via))
		}
		return nil
	}
}

// Origin is u's scheme://host:port, lower case, with the scheme's default
// port written out, so that two spellings of one origin compare equal.
func Origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
	}
	return strings.ToLower(u.Scheme + "://" + net.JoinHostPort(u.Hostname(), port))
}

// withCredentials adds the credentials to every request to the origin, and
// to no other. Headers the caller set (an MCP session id) are never
// replaced; query parameters of the credentials' names always are.
type withCredentials struct {
	creds  Credentials
	origin string
	base   http.RoundTripper
}

func (w *withCredentials) RoundTrip(req *http.Request) (*http.Response, error) {
	if (len(w.creds.Headers) == 0 && len(w.creds.Query) == 0) || Origin(req.URL) != w.origin {
		return w.base.RoundTrip(req)
	}
	req = req.Clone(req.Context()) // a RoundTripper must not modify its request
	for k, v := range w.creds.Headers {
		if req.Header.Get(k) == "" {
			req.Header.Set(k, v)
		}
	}
	if len(w.creds.Query) > 0 {
		q := req.URL.Query()
		for k, v := range w.creds.Query {
			q.Set(k, v)
		}
		req.URL.RawQuery = q.Encode()
	}
	return w.base.RoundTrip(req)
}

// CloseIdleConnections closes the client's idle connections.
func (w *withCredentials) CloseIdleConnections() {
	if c, ok := w.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
