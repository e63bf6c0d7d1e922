package hostguard

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// gateway is the gateway's guard, refusing with a JSON envelope as its
// error writer does.
func gateway(listen string, hosts, origins []string, dev bool) Config {
	return Config{Listen: listen, Hosts: hosts, Origins: origins, Dev: dev, What: "this gateway",
		HostsFlag: "--http-hosts", OriginsFlag: "--http-origins",
		Refuse: func(w http.ResponseWriter, status int, sentence string) {
			w.WriteHeader(status)
			_ = json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": sentence})
		}}
}

func TestTheGuardAdmitsOnlyNamesAndOriginsThisGatewayAnswersTo(t *testing.T) {
	t.Parallel()
	prod, err := New(gateway("0.0.0.0:8443", []string{"Gateway.Example.com."}, []string{"https://app.example.com"}, false))
	if err != nil {
		t.Fatal(err)
	}
	dev, err := New(gateway("127.0.0.2:8080", nil, nil, true))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		guard  *Guard
		host   string
		origin []string
		want   string // "" admits; otherwise the refusal contains it
	}{
		{"localhost with a port", dev, "localhost:8080", nil, ""},
		{"the IPv6 loopback in brackets", dev, "[::1]:8080", nil, ""},
		{"the listen host", dev, "127.0.0.2:8080", nil, ""},
		{"a rebinding name in dev mode", dev, "evil.example:8080", nil,
			`this gateway does not answer to Host "evil.example:8080": it answers to localhost, 127.0.0.1, ::1, 127.0.0.2 (dev mode answers loopback names only)`},
		{"a configured public name in any case", prod, "GATEWAY.example.com:8443", nil, ""},
		{"an unconfigured name in production names the flag", prod, "other.example.com", nil, "(add the name with --http-hosts)"},
		{"an unspecified listen address is no name", prod, "0.0.0.0:8443", nil, `does not answer to Host "0.0.0.0:8443"`},
		{"no Host at all", prod, "", nil, `does not answer to Host ""`},
		{"the gateway's own origin", dev, "localhost:8080", []string{"http://localhost:8080"}, ""},
		{"a configured origin", prod, "gateway.example.com", []string{"https://app.example.com"}, ""},
		{"a foreign page", dev, "localhost:8080", []string{"http://evil.example"},
			`this gateway refuses requests from Origin "http://evil.example": allow it with --http-origins if a page there should call this gateway`},
		{"another port of localhost is another origin", dev, "localhost:8080", []string{"http://localhost:6274"}, `refuses requests from Origin "http://localhost:6274"`},
		{"the opaque origin", dev, "localhost:8080", []string{"null"}, `Origin "null"`},
		{"two origins", prod, "gateway.example.com", []string{"https://app.example.com", "http://evil.example"}, "refuses requests from Origin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			reached := false
			h := tt.guard.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true }))
			r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
			r.Host = tt.host
			for _, o := range tt.origin {
				r.Header.Add("Origin", o)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if tt.want == "" {
				if !reached {
					t.Fatalf("refused: HTTP %d %s", w.Code, w.Body)
				}
				return
			}
			var env struct {
				OK    bool   `json:"ok"`
				Error string `json:"error"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &env); err != nil {
				t.Fatalf("HTTP %d %s: %v", w.Code, w.Body, err)
			}
			if reached || w.Code != http.StatusForbidden || env.OK || !strings.Contains(env.Error, tt.want) {
				t.Fatalf("reached=%v HTTP %d %s; want 403 containing %q", reached, w.Code, w.Body, tt.want)
			}
		})
	}
}

func TestTheGuardRefusesAConfigurationThatWouldOpenItUp(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		hosts, origins []string
		dev            bool
		want           string
	}{
		{"a public name in dev mode", []string{"gateway.example.com"}, nil, true,
			`--http-hosts: dev mode answers loopback names only, and "gateway.example.com" is not one`},
		{"an origin with a path", nil, []string{"https://app.example.com/mcp"}, false,
			`--http-origins: "https://app.example.com/mcp" is not an origin such as https://app.example.com`},
		{"an origin without a scheme", nil, []string{"app.example.com"}, false, `"app.example.com" is not an origin`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := New(gateway("127.0.0.1:8080", tt.hosts, tt.origins, tt.dev)); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New = %v, want %q", err, tt.want)
			}
		})
	}
	if _, err := New(gateway("127.0.0.1:8080", []string{"dev.localhost", "127.0.0.5"}, nil, true)); err != nil {
		t.Fatalf("loopback names in dev mode: %v", err)
	}
}
