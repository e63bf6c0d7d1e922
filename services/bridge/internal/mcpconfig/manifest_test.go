package mcpconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
)

// notebookManifest is a valid manifest, written as a person would.
const notebookManifest = `{
  "command": ["bin/notebook", "-v"],
  "tools": [
    {"name": "get", "description": "reads a key",
     "input_schema": {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}}
  ]
}`

func plugin(m *bridgev1.PluginManifest) *bridgev1.ServerConfig {
	return &bridgev1.ServerConfig{Transport: &bridgev1.ServerConfig_Plugin{Plugin: m}}
}

func notebookTool(name string) *registryv1.Tool {
	return &registryv1.Tool{Name: name, Description: "reads a key",
		InputSchema: `{"type":"object","properties":{"key":{"type":"string"}},"required":["key"]}`}
}

func TestParseManifestAcceptsAManifest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, file string
		want       *bridgev1.PluginManifest
	}{
		{"the command and tools alone, the schema made compact", notebookManifest,
			&bridgev1.PluginManifest{Command: []string{"bin/notebook", "-v"}, Tools: []*registryv1.Tool{notebookTool("get")}}},
		{"every field", `{"command":["nb"],"env":{"K":"v"},"cwd":"/srv","startAtMount":true,"maxLineBytes":4096,
			"tools":[{"name":"get","description":"d","input_schema":{},"title":"Get","output_schema":{"type":"object"},"annotations":{"readOnlyHint":true}}]}`,
			&bridgev1.PluginManifest{Command: []string{"nb"}, Env: map[string]string{"K": "v"}, Cwd: "/srv", StartAtMount: true, MaxLineBytes: 4096,
				Tools: []*registryv1.Tool{{Name: "get", Description: "d", InputSchema: `{}`, Title: proto.String("Get"),
					OutputSchema: proto.String(`{"type":"object"}`), Annotations: proto.String(`{"readOnlyHint":true}`)}}}},
		{"zero max line bytes means the default", `{"command":["nb"],"maxLineBytes":0,"tools":[{"name":"a","description":"","input_schema":{}}]}`,
			&bridgev1.PluginManifest{Command: []string{"nb"}, Tools: []*registryv1.Tool{{Name: "a", InputSchema: `{}`}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseManifest([]byte(tt.file))
			if err != nil {
				t.Fatalf("ParseManifest: %v", err)
			}
			if !proto.Equal(got, tt.want) {
				t.Errorf("manifest = %v\n     want %v", protojson.Format(got), protojson.Format(tt.want))
			}
		})
	}
}

func TestParseManifestRefusesWithASentence(t *testing.T) {
	t.Parallel()
	tool := `{"name":"get","description":"d","input_schema":{}}`
	tests := []struct {
		name, file, want string
	}{
		{"not JSON", `{"command":`, `the manifest ends before its JSON is complete`},
		{"not an object", `["nb"]`, `the manifest is not a JSON object`},
		{"an unknown field", `{"command":["nb"],"tools":[` + tool + `],"args":[]}`, `unknown field "args"`},
		{"a field in the wrong case", `{"Command":["nb"],"tools":[` + tool + `]}`, `unknown field "Command"`},
		{"a field twice", `{"command":["nb"],"command":["x"],"tools":[]}`, `the manifest has the key "command" twice`},
		{"no command", `{"tools":[` + tool + `]}`, `missing field "command"`},
		{"no tools", `{"command":["nb"]}`, `missing field "tools"`},
		{"a null field", `{"command":["nb"],"tools":[` + tool + `],"cwd":null}`, `field "cwd" is null; want a string, or leave it out`},
		{"a command as a string", `{"command":"nb","tools":[` + tool + `]}`, `field "command" must be an array of strings`},
		{"an empty command", `{"command":[],"tools":[` + tool + `]}`, `the manifest's command is empty: name the program that runs the backend`},
		{"env not strings", `{"command":["nb"],"env":{"A":1},"tools":[` + tool + `]}`, `field "env" must be an object of strings`},
		{"a call timeout that is not a duration", `{"command":["nb"],"callTimeout":"soon","tools":[` + tool + `]}`, `field "callTimeout" is "soon", not a duration string such as "90s" or "10m"`},
		{"a call timeout past a day", `{"command":["nb"],"callTimeout":"25h","tools":[` + tool + `]}`, `the manifest's call_timeout is 25h0m0s; want at most 24h0m0s`},
		{"startAtMount not a bool", `{"command":["nb"],"startAtMount":"yes","tools":[` + tool + `]}`, `field "startAtMount" must be true or false`},
		{"a quoted line bound", `{"command":["nb"],"maxLineBytes":"5","tools":[` + tool + `]}`, `field "maxLineBytes" must be a whole number`},
		{"a negative line bound", `{"command":["nb"],"maxLineBytes":-1,"tools":[` + tool + `]}`, `field "maxLineBytes" is -1; want 0 (the default) up to 2147483647`},
		{"a fractional line bound", `{"command":["nb"],"maxLineBytes":1.5,"tools":[` + tool + `]}`, `field "maxLineBytes" is 1.5; want a whole number`},
		{"tools not an array", `{"command":["nb"],"tools":{}}`, `field "tools" must be an array of tool objects`},
		{"no tools listed", `{"command":["nb"],"tools":[]}`, `the manifest lists no tools: a backend is mounted for the tools it serves`},
		{"a tool that is not an object", `{"command":["nb"],"tools":["get"]}`, `tools[0] is not a JSON object`},
		{"a tool without a name", `{"command":["nb"],"tools":[{"description":"d","input_schema":{}}]}`, `tools[0]: missing field "name"`},
		{"a tool without a description", `{"command":["nb"],"tools":[{"name":"get","input_schema":{}}]}`, `tool "get": missing field "description"`},
		{"a tool without a schema", `{"command":["nb"],"tools":[{"name":"get","description":"d"}]}`, `tool "get": missing field "input_schema"`},
		{"a schema that is not an object", `{"command":["nb"],"tools":[{"name":"get","description":"d","input_schema":"{}"}]}`, `tool "get": field "input_schema" must be a JSON object`},
		{"a schema that does not compile", `{"command":["nb"],"tools":[{"name":"get","description":"d","input_schema":{"type":12}}]}`, `tool "get": its input schema does not compile: `},
		{"an unknown tool field", `{"command":["nb"],"tools":[{"name":"get","description":"d","input_schema":{},"inputSchema":{}}]}`, `tool "get": unknown field "inputSchema"`},
		{"a tool taking a cwd", `{"command":["nb"],"tools":[{"name":"get","subject_cwd":true,"description":"d","input_schema":{}}]}`, `tool "get": field "subject_cwd" is not supported: a plugin backend is not told a working directory`},
		{"a tool with an unusable name", `{"command":["nb"],"tools":[{"name":"","description":"d","input_schema":{}}]}`, `tool "": an empty name is unusable`},
		{"a tool listed twice", `{"command":["nb"],"tools":[` + tool + `,` + tool + `]}`, `tool "get" is listed twice in the manifest`},
		{"a name that is not a string", `{"command":["nb"],"tools":[{"name":7,"description":"d","input_schema":{}}]}`, `tools[0]: field "name" must be a string`},
		{"an env name with =", `{"command":["nb"],"env":{"A=B":"c"},"tools":[` + tool + `]}`, `environment variable name "A=B" is not usable: it is empty or holds '=' or NUL`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseManifest([]byte(tt.file))
			if err == nil {
				t.Fatalf("ParseManifest accepted it: %v", got)
			}
			if err.Error() != tt.want && !(strings.HasSuffix(tt.want, ": ") && strings.HasPrefix(err.Error(), tt.want)) {
				t.Errorf("error = %q\n want %q", err.Error(), tt.want)
			}
		})
	}
}

func TestLoadManifestNamesTheFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"command":["nb"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadManifest(bad); err == nil || err.Error() != "plugin manifest "+bad+`: missing field "tools"` {
		t.Errorf("LoadManifest(bad) = %v", err)
	}
	if _, err := LoadManifest(filepath.Join(dir, "missing.json")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("LoadManifest(missing) = %v", err)
	}
}

// A plugin entry's manifest path starts at the config file's directory.
func TestPluginEntriesReadTheirManifest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "plugins"), 0o700); err != nil {
		t.Fatal(err)
	}
	man := filepath.Join(dir, "plugins", "notebook.json")
	if err := os.WriteFile(man, []byte(notebookManifest), 0o600); err != nil {
		t.Fatal(err)
	}
	want := plugin(&bridgev1.PluginManifest{Command: []string{"bin/notebook", "-v"}, Tools: []*registryv1.Tool{notebookTool("get")}})
	for _, entry := range []string{
		`{"type":"plugin","manifest":"plugins/notebook.json"}`,
		`{"manifest":"plugins/notebook.json"}`,
		`{"manifest":"` + man + `"}`,
	} {
		cfg := writeConfig(t, dir, `{"mcpServers":{"notes":`+entry+`}}`)
		got, err := Load(cfg)
		if err != nil {
			t.Fatalf("Load(%s): %v", entry, err)
		}
		if !proto.Equal(got["notes"], want) {
			t.Errorf("Load(%s) = %v", entry, protojson.Format(got["notes"]))
		}
	}
	tests := []struct {
		name, entry, want string
	}{
		{"a missing manifest", `{"manifest":"nope.json"}`, `server "notes": plugin manifest: open ` + filepath.Join(dir, "nope.json") + `: no such file or directory`},
		{"an empty manifest path", `{"manifest":""}`, `server "notes": field "manifest" is empty: give the path of the plugin's manifest file`},
		{"the plugin type without a manifest", `{"type":"plugin","url":"http://h/"}`, `server "notes": type "plugin" needs a "manifest"`},
		{"a manifest and a command", `{"manifest":"plugins/notebook.json","command":"x"}`, `server "notes": both "manifest" and "command" are set: a plugin backend's command is in its manifest`},
		{"a manifest and a url", `{"manifest":"plugins/notebook.json","url":"http://h/"}`, `server "notes": both "manifest" and "url" are set: a server is either a plugin backend or a URL to reach`},
		{"env beside a manifest", `{"manifest":"plugins/notebook.json","env":{}}`, `server "notes": field "env" applies to "command" servers; a plugin backend's is in its manifest`},
		{"headers beside a manifest", `{"manifest":"plugins/notebook.json","headers":{}}`, `server "notes": field "headers" applies to "url" servers, not plugin backends`},
		{"calls in parallel", `{"manifest":"plugins/notebook.json","maxInFlight":2}`, `server "notes": field "maxInFlight" is 2, but a plugin backend takes one call at a time`},
		{"a manifest that is refused", `{"manifest":"` + writeConfig(t, dir, `{"command":["nb"],"tools":[]}`) + `"}`, `server "notes": plugin manifest `},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(`{"mcpServers":{"notes":`+tt.entry+`}}`), dir)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error = %v\n want %q", err, tt.want)
			}
		})
	}
}

func writeConfig(t *testing.T, dir, content string) string {
	t.Helper()
	f, err := os.CreateTemp(dir, "*.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(content); err != nil {
		t.Fatal(err)
	}
	return f.Name()
}

// FuzzLoadManifest checks that any manifest either parses into one the
// bridge can run and advertise, or is refused with a sentence, and never
// panics. Its seeds run in plain `go test`.
func FuzzLoadManifest(f *testing.F) {
	for _, seed := range []string{
		notebookManifest,
		`{"command":["nb"],"env":{"K":"v"},"cwd":"/srv","startAtMount":true,"maxLineBytes":4096,"tools":[{"name":"get","description":"d","input_schema":{},"title":"T","output_schema":{},"annotations":{}}]}`,
		`{"command":["nb"],"tools":[{"name":"get","description":"d","input_schema":{"type":12}}]}`,
		`{"command":["nb"],"tools":[{"name":"a","description":"d","input_schema":{}},{"name":"a","description":"d","input_schema":{}}]}`,
		`{"command":["nb"],"maxLineBytes":1e3,"tools":[]}`,
		`{"command":[""],"tools":[{"name":"a","description":"d","input_schema":{}}]}`,
		`{"command":["nb\u0000"],"tools":[{"name":"a\u0001","description":"d","input_schema":{}}]}`,
		`{"command":["nb"],"tools":[{"name":"a","description":"d","input_schema":{"$ref":"http://x/s.json"}}]}`,
		`{"command":["nb"],"callTimeout":"2m","tools":[{"name":"a","description":"d","input_schema":{}}]}`,
		`{"command":["nb"],"callTimeout":"-3h","tools":[{"name":"a","description":"d","input_schema":{}}]}`,
		`{"command":null}`,
		`[]`,
		"",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseManifest(data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("a refusal without a sentence")
			}
			if m != nil {
				t.Fatal("a refusal that also returned a manifest")
			}
			return
		}
		if err := Check(plugin(m)); err != nil {
			t.Fatalf("accepted a manifest that Check refuses: %v", err)
		}
	})
}
