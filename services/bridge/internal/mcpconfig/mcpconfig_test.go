package mcpconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
)

func stdio(cmd string, args ...string) *bridgev1.ServerConfig {
	return &bridgev1.ServerConfig{Transport: &bridgev1.ServerConfig_Stdio{Stdio: &bridgev1.StdioTransport{Command: cmd, Args: args}}}
}

func TestParseAcceptsTheEcosystemShape(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		file string
		want map[string]*bridgev1.ServerConfig
	}{
		{"a command server with args, env and cwd", `{"mcpServers":{"files":{"command":"npx","args":["-y","server-files"],"env":{"TOKEN":"x"},"cwd":"/srv"}}}`,
			map[string]*bridgev1.ServerConfig{"files": {Transport: &bridgev1.ServerConfig_Stdio{Stdio: &bridgev1.StdioTransport{
				Command: "npx", Args: []string{"-y", "server-files"}, Env: map[string]string{"TOKEN": "x"}, Cwd: "/srv"}}}}},
		{"a url server with headers", `{"mcpServers":{"web":{"url":"https://mcp.example.com/mcp","headers":{"Authorization":"Bearer s3cret"}}}}`,
			map[string]*bridgev1.ServerConfig{"web": {Transport: &bridgev1.ServerConfig_Http{Http: &bridgev1.HttpTransport{
				Url: "https://mcp.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer s3cret"}}}}}},
		{"an explicit stdio type", `{"mcpServers":{"a":{"type":"stdio","command":"srv"}}}`,
			map[string]*bridgev1.ServerConfig{"a": stdio("srv")}},
		{"the streamable-http type", `{"mcpServers":{"a":{"type":"streamable-http","url":"http://127.0.0.1:3000/mcp"}}}`,
			map[string]*bridgev1.ServerConfig{"a": {Transport: &bridgev1.ServerConfig_Http{Http: &bridgev1.HttpTransport{Url: "http://127.0.0.1:3000/mcp"}}}}},
		{"the bridge's own options in camelCase", `{"mcpServers":{"a":{"command":"srv","trust":true,"exclusive":true,"allowTools":["x","y"],"denyTools":["y"],"maxInFlight":2,"maxTools":10,"crashLimit":3,"maxResultChars":500}}}`,
			map[string]*bridgev1.ServerConfig{"a": {Transport: stdio("srv").Transport, Trust: true, Exclusive: true, AllowTools: []string{"x", "y"},
				DenyTools: []string{"y"}, MaxInFlight: 2, MaxTools: 10, CrashLimit: 3, MaxResultChars: 500}}},
		{"deadlines and pings as duration strings", `{"mcpServers":{"a":{"command":"srv","callTimeout":"90s","pingInterval":"1m","pingTimeout":"5s"}}}`,
			map[string]*bridgev1.ServerConfig{"a": {Transport: stdio("srv").Transport, CallTimeout: durationpb.New(90 * time.Second),
				PingInterval: durationpb.New(time.Minute), PingTimeout: durationpb.New(5 * time.Second)}}},
		{"a pinned MCP revision", `{"mcpServers":{"a":{"command":"srv","protocolVersion":"2025-11-25"}}}`,
			map[string]*bridgev1.ServerConfig{"a": {Transport: stdio("srv").Transport, ProtocolVersion: "2025-11-25"}}},
		{"several servers", `{"mcpServers":{"a":{"command":"one"},"b-2":{"command":"two"}}}`,
			map[string]*bridgev1.ServerConfig{"a": stdio("one"), "b-2": stdio("two")}},
		{"no servers at all", `{"mcpServers":{}}`, map[string]*bridgev1.ServerConfig{}},
		{"zero means the default", `{"mcpServers":{"a":{"command":"srv","maxTools":0}}}`,
			map[string]*bridgev1.ServerConfig{"a": stdio("srv")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse([]byte(tt.file), t.TempDir())
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d servers, want %d", len(got), len(tt.want))
			}
			for name, want := range tt.want {
				if !proto.Equal(got[name], want) {
					t.Errorf("server %q = %v, want %v", name, protojson.Format(got[name]), protojson.Format(want))
				}
			}
		})
	}
}

func TestParseRefusesWithASentence(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, file, want string
	}{
		{"not JSON", `{"mcpServers":`, `the file ends before its JSON is complete`},
		{"a syntax error", `{"mcpServers" 1}`, `the file is not valid JSON: invalid character '1' after object key`},
		{"not an object", `[]`, `the file is not a JSON object`},
		{"trailing data", `{"mcpServers":{}} {}`, `the file has data after its closing brace`},
		{"no mcpServers", `{}`, `missing field "mcpServers"`},
		{"an unknown top-level field", `{"mcpServers":{},"globalShortcut":"x"}`, `unknown top-level field "globalShortcut": the file holds only "mcpServers"`},
		{"mcpServers twice", `{"mcpServers":{},"mcpServers":{}}`, `the file has the key "mcpServers" twice`},
		{"mcpServers not an object", `{"mcpServers":[]}`, `"mcpServers" is not a JSON object`},
		{"a server named twice", `{"mcpServers":{"a":{"command":"x"},"a":{"command":"y"}}}`, `"mcpServers" has the key "a" twice`},
		{"a bad client name", `{"mcpServers":{"My_Server":{"command":"x"}}}`, `server "My_Server": client name "My_Server" is not 1–32 chars of [a-z0-9-] starting with a letter or digit`},
		{"a server that is not an object", `{"mcpServers":{"a":"npx"}}`, `server "a": the server's value is not a JSON object`},
		{"an unknown server field", `{"mcpServers":{"a":{"command":"x","autoApprove":[]}}}`, `server "a": unknown field "autoApprove"`},
		{"a field in the wrong case", `{"mcpServers":{"a":{"Command":"x"}}}`, `server "a": unknown field "Command"`},
		{"a field given twice", `{"mcpServers":{"a":{"command":"x","command":"y"}}}`, `server "a": the server's value has the key "command" twice`},
		{"a null field", `{"mcpServers":{"a":{"command":"x","args":null}}}`, `server "a": field "args" is null; want an array of strings, or leave it out`},
		{"args not strings", `{"mcpServers":{"a":{"command":"x","args":["-v",2]}}}`, `server "a": field "args" must be an array of strings`},
		{"env not strings", `{"mcpServers":{"a":{"command":"x","env":{"N":1}}}}`, `server "a": field "env" must be an object of strings`},
		{"trust not a bool", `{"mcpServers":{"a":{"command":"x","trust":"yes"}}}`, `server "a": field "trust" must be true or false`},
		{"exclusive not a bool", `{"mcpServers":{"a":{"command":"x","exclusive":1}}}`, `server "a": field "exclusive" must be true or false`},
		{"a quoted number", `{"mcpServers":{"a":{"command":"x","maxTools":"5"}}}`, `server "a": field "maxTools" must be a whole number`},
		{"a fractional number", `{"mcpServers":{"a":{"command":"x","maxInFlight":1.5}}}`, `server "a": field "maxInFlight" is 1.5; want a whole number`},
		{"a negative number", `{"mcpServers":{"a":{"command":"x","crashLimit":-1}}}`, `server "a": field "crashLimit" is -1; want 0 (the default) up to 2147483647`},
		{"a number past int32", `{"mcpServers":{"a":{"command":"x","maxResultChars":2147483648}}}`, `server "a": field "maxResultChars" is 2147483648; want 0 (the default) up to 2147483647`},
		{"a timeout that is not a duration", `{"mcpServers":{"a":{"command":"x","callTimeout":"ten minutes"}}}`, `server "a": field "callTimeout" is "ten minutes", not a duration string such as "90s" or "10m"`},
		{"a timeout that is a number", `{"mcpServers":{"a":{"command":"x","pingTimeout":5}}}`, `server "a": field "pingTimeout" must be a duration string such as "90s" or "10m"`},
		{"a negative timeout", `{"mcpServers":{"a":{"command":"x","callTimeout":"-1s"}}}`, `server "a": call_timeout is -1s; want 0 (the default) or more`},
		{"no transport", `{"mcpServers":{"a":{"trust":true}}}`, `server "a": neither "command" nor "url" is set: say how to reach the server`},
		{"both transports", `{"mcpServers":{"a":{"command":"x","url":"http://h/mcp"}}}`, `server "a": both "command" and "url" are set: a server is either a command to run or a URL to reach`},
		{"headers on a command server", `{"mcpServers":{"a":{"command":"x","headers":{"A":"b"}}}}`, `server "a": field "headers" applies to "url" servers, not "command" servers`},
		{"args on a url server", `{"mcpServers":{"a":{"url":"http://h/mcp","args":[]}}}`, `server "a": field "args" applies to "command" servers, not "url" servers`},
		{"an empty command", `{"mcpServers":{"a":{"command":"  "}}}`, `server "a": the command is empty: name the program that runs the server`},
		{"a url without a scheme", `{"mcpServers":{"a":{"url":"localhost:3000/mcp"}}}`, `server "a": url "localhost:3000/mcp" is not an http:// or https:// URL with a host`},
		{"a websocket url", `{"mcpServers":{"a":{"url":"ws://h/mcp"}}}`, `server "a": url "ws://h/mcp" is not an http:// or https:// URL with a host`},
		{"the sse type", `{"mcpServers":{"a":{"type":"sse","url":"http://h/sse"}}}`, `server "a": type "sse" is not supported: the bridge speaks stdio and Streamable HTTP ("http")`},
		{"an unknown type", `{"mcpServers":{"a":{"type":"grpc","url":"http://h/"}}}`, `server "a": unknown type "grpc": want "stdio", "http", "streamable-http" or "plugin"`},
		{"the stdio type with a url", `{"mcpServers":{"a":{"type":"stdio","url":"http://h/"}}}`, `server "a": type "stdio" needs a "command"`},
		{"the http type with a command", `{"mcpServers":{"a":{"type":"http","command":"x"}}}`, `server "a": type "http" needs a "url"`},
		{"an env name with =", `{"mcpServers":{"a":{"command":"x","env":{"A=B":"c"}}}}`, `server "a": environment variable name "A=B" is not usable: it is empty or holds '=' or NUL`},
		{"a header name with a space", `{"mcpServers":{"a":{"url":"http://h/","headers":{"X Token":"v"}}}}`, `server "a": header name "X Token" is not a valid HTTP header name`},
		{"a header value with a newline", `{"mcpServers":{"a":{"url":"http://h/","headers":{"X-Token":"a\nb"}}}}`, `server "a": header "X-Token" has a value that is not a valid HTTP header value`},
		{"the transport's own header", `{"mcpServers":{"a":{"url":"http://h/","headers":{"Mcp-Session-Id":"abc"}}}}`, `server "a": header "Mcp-Session-Id" belongs to the MCP transport, which sets it itself`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse([]byte(tt.file), t.TempDir())
			if err == nil {
				t.Fatalf("Parse accepted it: %v", got)
			}
			if err.Error() != tt.want {
				t.Errorf("error = %q\n want %q", err.Error(), tt.want)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	if err := os.WriteFile(good, []byte(`{"mcpServers":{"a":{"command":"srv"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := Load(good); err != nil || !proto.Equal(got["a"], stdio("srv")) {
		t.Errorf("Load(good) = %v, %v", got, err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"mcpServers":{"a":{}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(bad); err == nil || !strings.HasPrefix(err.Error(), "mcp config "+bad+": server \"a\": neither") {
		t.Errorf("Load(bad) error = %v, want it to name the file and the server", err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, make([]byte, MaxFileBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(big); err == nil || !strings.Contains(err.Error(), "is larger than") {
		t.Errorf("Load(big) error = %v, want the size refusal", err)
	}
	if _, err := Load(filepath.Join(dir, "missing.json")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("Load(missing) error = %v", err)
	}
}

func httpServer(url string, headers map[string]string) *bridgev1.ServerConfig {
	return &bridgev1.ServerConfig{Transport: &bridgev1.ServerConfig_Http{Http: &bridgev1.HttpTransport{Url: url, Headers: headers}}}
}

// Credentials may go over https anywhere, and over plain http to this
// machine only; a server without credentials may be reached over either.
func TestCheckTakesCredentialsOverHTTPSOrToLoopback(t *testing.T) {
	t.Parallel()
	creds := map[string]string{"Authorization": "Bearer s"}
	for _, cfg := range []*bridgev1.ServerConfig{
		httpServer("https://mcp.example.com/mcp", creds),
		httpServer("http://127.0.0.1:9000/mcp", creds),
		httpServer("http://localhost:9000/mcp", creds),
		httpServer("http://[::1]:9000/mcp", creds),
		httpServer("http://mcp.example.com/mcp", nil),
	} {
		if err := Check(cfg); err != nil {
			t.Errorf("Check(%s) = %v", cfg.GetHttp().GetUrl(), err)
		}
	}
}

func TestCheckRefusesMountConfigs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  *bridgev1.ServerConfig
		want string
	}{
		{"no config", nil, "no config: say how to reach the server"},
		{"no transport", &bridgev1.ServerConfig{}, "no transport: give a command (stdio), a url (Streamable HTTP), a plugin manifest or an OpenAPI document"},
		{"an empty stdio", &bridgev1.ServerConfig{Transport: &bridgev1.ServerConfig_Stdio{}}, "the command is empty: name the program that runs the server"},
		{"an empty http", &bridgev1.ServerConfig{Transport: &bridgev1.ServerConfig_Http{}}, "the http transport is empty: give the server's url"},
		{"an empty plugin manifest", &bridgev1.ServerConfig{Transport: &bridgev1.ServerConfig_Plugin{}}, "the plugin manifest is empty: give the backend's command and tools"},
		{"a plugin without a command", &bridgev1.ServerConfig{Transport: &bridgev1.ServerConfig_Plugin{Plugin: &bridgev1.PluginManifest{}}}, "the manifest's command is empty: name the program that runs the backend"},
		{"a plugin without tools", plugin(&bridgev1.PluginManifest{Command: []string{"nb"}}), "the manifest lists no tools: a backend is mounted for the tools it serves"},
		{"a plugin tool with a bad schema", plugin(&bridgev1.PluginManifest{Command: []string{"nb"}, Tools: []*registryv1.Tool{{Name: "get", InputSchema: `[]`}}}), `tool "get": its input schema is not a JSON object`},
		{"a plugin tool listed twice", plugin(&bridgev1.PluginManifest{Command: []string{"nb"}, Tools: []*registryv1.Tool{notebookTool("get"), notebookTool("get")}}), `tool "get" is listed twice in the manifest`},
		{"a plugin tool taking a cwd", plugin(&bridgev1.PluginManifest{Command: []string{"nb"}, Tools: []*registryv1.Tool{{Name: "get", InputSchema: `{}`, SubjectCwd: proto.Bool(true)}}}), `tool "get": subject_cwd is not supported: a plugin backend is not told a working directory`},
		{"a plugin with a negative line bound", plugin(&bridgev1.PluginManifest{Command: []string{"nb"}, Tools: []*registryv1.Tool{notebookTool("get")}, MaxLineBytes: -1}), "max_line_bytes is -1; want 0 (1 MiB) or more"},
		{"an MCP revision the SDK does not speak", &bridgev1.ServerConfig{Transport: stdio("srv").Transport, ProtocolVersion: "2099-01-01"},
			`protocol_version "2099-01-01" is not an MCP revision the bridge speaks (2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05)`},
		{"an MCP revision for a plugin", &bridgev1.ServerConfig{Transport: plugin(&bridgev1.PluginManifest{Command: []string{"nb"}, Tools: []*registryv1.Tool{notebookTool("get")}}).Transport, ProtocolVersion: "2025-11-25"},
			`protocol_version "2025-11-25" is for MCP servers; a plugin backend or an HTTP API speaks no MCP revision`},
		{"a plugin taking calls in parallel", &bridgev1.ServerConfig{Transport: plugin(&bridgev1.PluginManifest{Command: []string{"nb"}, Tools: []*registryv1.Tool{notebookTool("get")}}).Transport, MaxInFlight: 2},
			"max_in_flight is 2, but a plugin backend takes one call at a time: give 0 or 1"},
		{"a negative max_in_flight", &bridgev1.ServerConfig{Transport: stdio("x").Transport, MaxInFlight: -2}, "max_in_flight is -2; want 0 (the default) or more"},
		{"credentials over plain http to another machine", httpServer("http://mcp.example.com/mcp", map[string]string{"X-Api-Key": "k", "Authorization": "Bearer s"}),
			`url "http://mcp.example.com/mcp" is plain http, so the server's credentials (headers Authorization, X-Api-Key) would cross the network in the clear: use https://, or a loopback host`},
		{"a password in a plain http url", httpServer("http://me:pw@10.0.0.5:8080/mcp", nil),
			`url "http://me:xxxxx@10.0.0.5:8080/mcp" is plain http, so the server's credentials (a user and password in the url) would cross the network in the clear: use https://, or a loopback host`},
		{"a negative call_timeout", &bridgev1.ServerConfig{Transport: stdio("x").Transport, CallTimeout: durationpb.New(-time.Second)}, "call_timeout is -1s; want 0 (the default) or more"},
		{"a call_timeout over a day", &bridgev1.ServerConfig{Transport: stdio("x").Transport, CallTimeout: durationpb.New(25 * time.Hour)}, "call_timeout is 25h0m0s; want at most 24h0m0s"},
		{"an invalid ping_interval", &bridgev1.ServerConfig{Transport: stdio("x").Transport, PingInterval: &durationpb.Duration{Seconds: 1, Nanos: -1}},
			"ping_interval (1 seconds, -1 nanos) is not a valid duration: seconds and nanos must share one sign, and nanos stay within a second"},
		{"a ping_timeout over a minute", &bridgev1.ServerConfig{Transport: stdio("x").Transport, PingTimeout: durationpb.New(2 * time.Minute)}, "ping_timeout is 2m0s; want at most 1m0s"},
		{"a negative call_timeout in a manifest", plugin(&bridgev1.PluginManifest{Command: []string{"nb"}, Tools: []*registryv1.Tool{notebookTool("get")}, CallTimeout: durationpb.New(-time.Minute)}),
			"the manifest's call_timeout is -1m0s; want 0 (the default) or more"},
		{"a pinged plugin", &bridgev1.ServerConfig{Transport: plugin(&bridgev1.PluginManifest{Command: []string{"nb"}, Tools: []*registryv1.Tool{notebookTool("get")}}).Transport, PingInterval: durationpb.New(time.Second)},
			"ping_interval and ping_timeout are for MCP servers; a plugin backend is not pinged"},
		{"a NUL in an env value", &bridgev1.ServerConfig{Transport: &bridgev1.ServerConfig_Stdio{Stdio: &bridgev1.StdioTransport{Command: "x", Env: map[string]string{"A": "a\x00b"}}}}, `environment variable "A" holds a NUL byte`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if err := Check(tt.cfg); err == nil || err.Error() != tt.want {
				t.Errorf("Check = %v, want %q", err, tt.want)
			}
		})
	}
}
