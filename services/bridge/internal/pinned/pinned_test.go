package pinned

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
)

// Two spellings of one origin compare equal; a different scheme, host or
// port is another origin.
func TestOriginWritesTheDefaultPort(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ a, b string }{
		{"https://API.example.com/v1", "https://api.example.com:443/other"},
		{"http://127.0.0.1/x", "HTTP://127.0.0.1:80"},
		{"http://[::1]:8080/", "http://[::1]:8080/y?q=1"},
	} {
		if Origin(parseURL(t, c.a)) != Origin(parseURL(t, c.b)) {
			t.Errorf("Origin(%s) = %s, Origin(%s) = %s; want one origin", c.a, Origin(parseURL(t, c.a)), c.b, Origin(parseURL(t, c.b)))
		}
	}
	for _, c := range []struct{ a, b string }{
		{"http://api.example.com", "https://api.example.com"},
		{"https://api.example.com", "https://api.example.com:8443"},
		{"https://api.example.com", "https://example.com"},
	} {
		if Origin(parseURL(t, c.a)) == Origin(parseURL(t, c.b)) {
			t.Errorf("Origin(%s) = Origin(%s) = %s; want two origins", c.a, c.b, Origin(parseURL(t, c.a)))
		}
	}
}

// The client adds the credentials to requests to its origin only: a
// header the caller set is kept, a query parameter of a credential's name
// is replaced, and a request the caller sends elsewhere carries neither.
func TestCredentialsGoToTheOriginOnly(t *testing.T) {
	t.Parallel()
	seen := make(chan *http.Request, 2)
	record := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen <- r })
	home, other := httptest.NewServer(record), httptest.NewServer(record)
	t.Cleanup(home.Close)
	t.Cleanup(other.Close)
	client := Client(parseURL(t, home.URL), Credentials{Headers: map[string]string{"X-Key": "k", "Mcp-Session-Id": "mine"}, Query: map[string]string{"key": "q"}}, "this API")
	req := newGet(t, home.URL+"/a?key=theirs&n=1")
	req.Header.Set("Mcp-Session-Id", "the caller's")
	for _, r := range []*http.Request{req, newGet(t, other.URL+"/b?n=1")} {
		res, err := client.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
	at := <-seen
	if at.Header.Get("X-Key") != "k" || at.Header.Get("Mcp-Session-Id") != "the caller's" || at.URL.Query().Get("key") != "q" || at.URL.Query().Get("n") != "1" {
		t.Errorf("the origin was sent %v %s", at.Header, at.URL)
	}
	if req.URL.Query().Get("key") != "theirs" {
		t.Errorf("the caller's request was changed: %s", req.URL)
	}
	elsewhere := <-seen
	if elsewhere.Header.Get("X-Key") != "" || elsewhere.Header.Get("Mcp-Session-Id") != "" || elsewhere.URL.Query().Has("key") {
		t.Errorf("another origin was sent %v %s", elsewhere.Header, elsewhere.URL)
	}
}

func parseURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func newGet(t *testing.T, s string) *http.Request {
	t.Helper()
	r, err := http.NewRequest(http.MethodGet, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
