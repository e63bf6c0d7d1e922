package serverjson

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
)

func fixture(t *testing.T, name string) *Server {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	servers, err := Parse(data)
	if err != nil || len(servers) != 1 {
		t.Fatalf("Parse(%s) = %v, %v", name, servers, err)
	}
	return servers[0]
}

// Each fixture becomes the mount its first runnable way gives, with the
// values set; the summary shows secrets as ***.
func TestEntriesBecomeMounts(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, file string
		opts       Options
		client     string
		want       *bridgev1.ServerConfig
		summary    string
		used       []string
	}{
		{"a remote over Streamable HTTP, the SSE one passed over", "remote.json", Options{Values: map[string]string{"token": "s3cret"}}, "weather-api",
			&bridgev1.ServerConfig{Transport: &bridgev1.ServerConfig_Http{Http: &bridgev1.HttpTransport{Url: "https://eu.weather.example.com/mcp",
				Headers: map[string]string{"Authorization": "Bearer s3cret", "X-Units": "metric"}}}},
			"remote https://eu.weather.example.com/mcp (Authorization: Bearer ***, X-Units: metric)", []string{"token"}},
		{"an npm package run by npx", "npm.json", Options{Client: "files", Values: map[string]string{"FILES_TOKEN": "s3cret", "root": "/srv/data", "read-only": "true"}}, "files",
			&bridgev1.ServerConfig{Transport: &bridgev1.ServerConfig_Stdio{Stdio: &bridgev1.StdioTransport{Command: "npx",
				Args: []string{"-y", "@example/mcp-files@1.4.2", "--read-only", "--log-level", "info", "/srv/data"},
				Env:  map[string]string{"FILES_TOKEN": "s3cret", "FILES_CACHE": "/tmp/files-cache"}}}},
			"FILES_CACHE=/tmp/files-cache FILES_TOKEN=*** npx -y @example/mcp-files@1.4.2 --read-only --log-level info /srv/data", []string{"FILES_TOKEN", "read-only", "root"}},
		{"a PyPI package run by uvx, wrapped as the registry serves it, the bundle passed over", "pypi.json", Options{}, "time",
			&bridgev1.ServerConfig{Transport: &bridgev1.ServerConfig_Stdio{Stdio: &bridgev1.StdioTransport{Command: "uvx",
				Args: []string{"mcp-server-time==0.6.2", "--local-timezone", "UTC"}, Env: map[string]string{}}}},
			"uvx mcp-server-time==0.6.2 --local-timezone UTC", []string{}},
		{"an OCI image run by docker, its key passed by name", "oci.json", Options{Values: map[string]string{"SEARCH_KEY": "k"}}, "search",
			&bridgev1.ServerConfig{Transport: &bridgev1.ServerConfig_Stdio{Stdio: &bridgev1.StdioTransport{Command: "docker",
				Args: []string{"run", "--rm", "-i", "--network", "none", "-e", "SEARCH_KEY", "docker.io/example/search:3.0.0"}, Env: map[string]string{"SEARCH_KEY": "k"}}}},
			"SEARCH_KEY=*** docker run --rm -i --network none -e SEARCH_KEY docker.io/example/search:3.0.0", []string{"SEARCH_KEY"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := Import(fixture(t, c.file), c.opts)
			if err != nil {
				t.Fatal(err)
			}
			if m.Client != c.client || !proto.Equal(m.Config, c.want) || m.Summary != c.summary || !slices.Equal(m.Used, c.used) {
				t.Errorf("Import = %s %v\n%q used %v\nwant %s %v\n%q used %v", m.Client, m.Config, m.Summary, m.Used, c.client, c.want, c.summary, c.used)
			}
			if strings.Contains(m.Summary, "s3cret") {
				t.Errorf("the summary shows a secret: %q", m.Summary)
			}
		})
	}
}

// A required value nobody set is refused with a sentence naming how to set
// it, and never a value; what cannot run here is refused with each reason.
func TestWhatCannotBeMountedIsRefused(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, file string
		opts       Options
		want       string
	}{
		{"a missing required secret variable", "remote.json", Options{},
			`server "io.example/weather-api" needs the secret variable "token" (Your weather API token): set it with --set token=…`},
		{"a missing required environment variable", "npm.json", Options{Values: map[string]string{"root": "/srv"}},
			`server "io.github.example/files" needs the secret environment variable "FILES_TOKEN" (The token the server checks): set it with --set FILES_TOKEN=…`},
		{"a missing required argument", "npm.json", Options{Values: map[string]string{"FILES_TOKEN": "s3cret"}},
			`server "io.github.example/files" needs the argument "root" (The directory served): set it with --set root=…`},
		{"a value outside the choices", "remote.json", Options{Values: map[string]string{"token": "t", "region": "mars"}},
			`variable "region" takes one of eu, us, not "mars"`},
		{"only ways that cannot run", "oci.json", Options{Prefer: "npm"},
			`server "io.github.example/search" cannot run here: package 2 (npm @example/search-http): it serves streamable-http on a port of its own once started; start it yourself and mount its URL`},
		{"no way preferred", "pypi.json", Options{Prefer: "oci"}, `server "io.github.example/time" has no oci way to run`},
		{"a bundle", "pypi.json", Options{Prefer: "mcpb"}, `package 1 (mcpb https://example.com/time.mcpb): an MCPB bundle must be downloaded and unpacked, which the bridge does not do`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Import(fixture(t, c.file), c.opts)
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "s3cret") {
				t.Errorf("Import = %v\nwant a refusal holding %q, and no secret", err, c.want)
			}
		})
	}
	for _, c := range []struct{ doc, want string }{
		{`[]`, "the document is not a JSON object"},
		{`{"description":"x"}`, `the entry has no "name"`},
		{`{"name":"weather"}`, `server name "weather" is not in reverse-DNS form with one slash`},
		{`{"servers":[]}`, `"servers" lists no server`},
	} {
		if _, err := Parse([]byte(c.doc)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%s) = %v, want %q", c.doc, err, c.want)
		}
	}
}

// An export imports again as the same mount, and holds no value of a
// header or environment variable.
func TestAnExportImportsAsTheSameMount(t *testing.T) {
	t.Parallel()
	for _, file := range []string{"remote.json", "npm.json", "pypi.json", "oci.json"} {
		t.Run(file, func(t *testing.T) {
			values := map[string]string{"token": "s3cret", "FILES_TOKEN": "s3cret", "root": "/srv", "SEARCH_KEY": "s3cret"}
			m, err := Import(fixture(t, file), Options{Values: values})
			if err != nil {
				t.Fatal(err)
			}
			exported, err := Export(m.Client, m.Config, &bridgev1.ServerStatus{ServerName: "srv", ServerVersion: "9"})
			if err != nil {
				t.Fatal(err)
			}
			text, err := Encode(exported)
			if err != nil || strings.Contains(text, "s3cret") || strings.Contains(text, "/tmp/files-cache") {
				t.Fatalf("the export (%v) holds a value:\n%s", err, text)
			}
			var back Server
			if err := json.Unmarshal([]byte(text), &back); err != nil {
				t.Fatal(err)
			}
			again, err := Import(&back, Options{Client: m.Client, Values: map[string]string{"Authorization": "Bearer s3cret", "X-Units": "metric",
				"FILES_TOKEN": "s3cret", "FILES_CACHE": "/tmp/files-cache", "SEARCH_KEY": "k"}})
			if err != nil {
				t.Fatal(err)
			}
			if file == "oci.json" {
				m.Config.GetStdio().Env["SEARCH_KEY"] = "k"
			}
			if !proto.Equal(again.Config, m.Config) {
				t.Errorf("exported and imported again:\n%v\nwas\n%v", again.Config, m.Config)
			}
		})
	}
	for _, cfg := range []*bridgev1.ServerConfig{
		{Transport: &bridgev1.ServerConfig_Stdio{Stdio: &bridgev1.StdioTransport{Command: "/usr/local/bin/my-server"}}},
		{Transport: &bridgev1.ServerConfig_Plugin{Plugin: &bridgev1.PluginManifest{}}},
		{Transport: &bridgev1.ServerConfig_Openapi{Openapi: &bridgev1.OpenApiTransport{}}},
	} {
		if _, err := Export("x", cfg, nil); err == nil || !strings.Contains(err.Error(), "server.json cannot describe it") {
			t.Errorf("Export(%v) = %v", cfg, err)
		}
	}
}

// Whatever the document, Parse and Import answer with entries and mounts or
// a sentence, and never panic; a mount imported exports to an entry that
// parses again.
func FuzzParseAndImport(f *testing.F) {
	for _, name := range []string{"remote.json", "npm.json", "pypi.json", "oci.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"servers":[{"server":{"name":"a/b","remotes":[{"type":"streamable-http","url":"https://{h}/mcp","variables":{"h":{"isRequired":true}}}]}}]}`))
	f.Add([]byte(`{"name":"a/b","packages":[{"registryType":"npm","identifier":"x","transport":{"type":"stdio"},"packageArguments":[{"type":"named","name":"--v","isRepeated":true,"value":"{v}"}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		servers, err := Parse(data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an empty refusal")
			}
			return
		}
		for _, s := range servers {
			m, err := Import(s, Options{Values: map[string]string{"v": "1", "h": "example.com"}})
			if err != nil {
				if err.Error() == "" {
					t.Fatal("an empty refusal")
				}
				continue
			}
			exported, err := Export(m.Client, m.Config, nil)
			if err != nil {
				continue // a mount server.json cannot describe
			}
			text, err := Encode(exported)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			if _, err := Parse([]byte(text)); err != nil {
				t.Fatalf("the export of %q does not parse: %v\n%s", s.Name, err, text)
			}
		}
	})
}
