package mcpconfig

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/switchboard-run/switchboard/kit/suite/names"
)

// FuzzLoadConfig checks that any input either parses into configs the
// bridge can run or is refused with a sentence, and never panics.
func FuzzLoadConfig(f *testing.F) {
	for _, seed := range []string{
		`{"mcpServers":{"files":{"command":"npx","args":["-y","server-files"],"env":{"TOKEN":"x"},"cwd":"/srv"}}}`,
		`{"mcpServers":{"web":{"type":"http","url":"https://mcp.example.com/mcp","headers":{"Authorization":"Bearer s"}}}}`,
		`{"mcpServers":{"a":{"command":"srv","trust":true,"allowTools":["x"],"denyTools":["y"],"maxInFlight":2,"maxTools":10,"crashLimit":3,"maxResultChars":500}}}`,
		`{"mcpServers":{"a":{"command":"x","command":"y"}}}`,
		`{"mcpServers":{"a":{"maxTools":1e3,"command":"x"}}}`,
		`{"mcpServers":{"A":{"url":"ws://x"}}}`,
		`{"mcpServers":{"a":{"env":{"":""},"command":"x"}}}`,
		`{"mcpServers":null}`,
		`{"mcpServers":{}}  `,
		`[{"mcpServers":{}}]`,
		`{"mcpServers":{"a":{"headers":{"k":"v\u0000"},"url":"http://h"}}}`,
		`{"mcpServers":{"notes":{"type":"plugin","manifest":"notebook.json","crashLimit":2}}}`,
		`{"mcpServers":{"notes":{"manifest":"notebook.json","maxInFlight":3}}}`,
		`{"mcpServers":{"notes":{"manifest":"notebook.json","env":{"A":"b"}}}}`,
		`{"mcpServers":{"notes":{"manifest":"missing.json"}}}`,
		`{"mcpServers":{"notes":{"type":"plugin","command":"x"}}}`,
		`{"mcpServers":{"a":{"command":"x","callTimeout":"90s","pingInterval":"1m","pingTimeout":"5s"}}}`,
		`{"mcpServers":{"a":{"command":"x","callTimeout":"-1ns","pingTimeout":"9223372036s"}}}`,
		`{"mcpServers":{"notes":{"manifest":"notebook.json","pingInterval":"1s"}}}`,
		"",
	} {
		f.Add([]byte(seed))
	}
	// Plugin entries name a manifest relative to the file's directory.
	dir := f.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notebook.json"), []byte(notebookManifest), 0o600); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		servers, err := Parse(data, dir)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("a refusal without a sentence")
			}
			if servers != nil {
				t.Fatal("a refusal that also returned servers")
			}
			return
		}
		for name, cfg := range servers {
			if err := names.CheckClient(name); err != nil {
				t.Fatalf("accepted a bad client name: %v", err)
			}
			if err := Check(cfg); err != nil {
				t.Fatalf("accepted server %q that Check refuses: %v", name, err)
			}
		}
	})
}
