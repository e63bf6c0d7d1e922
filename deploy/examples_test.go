package deploy

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/switchboard-run/switchboard/kit/suite/process"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// The files compose mounts must work, not only exist: this serves the
// example host's tools file and the bridge's mcpServers file through a real
// suite (`switchboard dev`), with each program path the files name (a path
// in the image) replaced by the same program built here, and calls a tool
// of each.
func TestExampleFilesServeThroughARealSuite(t *testing.T) {
	t.Parallel()
	p := loadCompose(t, nil)
	svcs := services(t, p)
	dir := t.TempDir()
	toolsFile := localTools(t, svcs["example-host"], dir)
	mcpFile := localMCPConfig(t, svcs["bridge"], dir)

	// The host's client name is its certificate's CN in compose: its
	// service name.
	host := ""
	for name, s := range svcs {
		if s.sub[0] == "host" {
			host = name
		}
	}
	bin := testkit.Build(t, switchboardPkg)
	grpcAddr := testkit.FreeAddr(t)
	testkit.Start(t, bin, "dev", "--grpc", grpcAddr, "--http", testkit.FreeAddr(t),
		"--data", filepath.Join(dir, "data"), "--mcp-config", mcpFile,
		"--tools", toolsFile, "--tools-client", host)
	testkit.WaitHealthy(t, grpcAddr, "", 60*time.Second)

	for _, tc := range []struct {
		name, tool, input, want string
	}{
		{"the example host's echo tool returns its input", host + "_echo", `{"message":"through the compose example"}`, `{"message":"through the compose example"}`},
		{"the bridge's everything server answers a call", "everything_test_simple_text", `{}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := callUntilAdvertised(t, bin, grpcAddr, filepath.Join(dir, "data", process.DevSecretFile), tc.tool, tc.input)
			if tc.want != "" && got != tc.want {
				t.Errorf("%s printed %q; want %q", tc.tool, got, tc.want)
			}
			if got == "" {
				t.Errorf("%s printed nothing", tc.tool)
			}
		})
	}
}

// localImagePath maps a program's path in the image to the same program
// built here.
func localImagePath(t *testing.T) func(string) string {
	bins := imageBinaries(t)
	return func(imagePath string) string {
		t.Helper()
		b, ok := bins[imagePath]
		if !ok {
			t.Fatalf("the examples run %s, which the image does not ship (it ships %v)", imagePath, slices.Sorted(maps.Keys(bins)))
		}
		return b.local(t)
	}
}

// mountSource is the file of the repository s's --flagName names in its
// container.
func mountSource(t *testing.T, s *service, flagName string) string {
	t.Helper()
	m, ok := s.mountAt(s.flags[flagName])
	if !ok {
		t.Fatalf("%s --%s=%s is mounted from nowhere", s.name, flagName, s.flags[flagName])
	}
	return m.Source
}

// localTools writes host's tools file into dir, each command's program (a
// path in the image) replaced by the same program built here.
func localTools(t *testing.T, host *service, dir string) string {
	t.Helper()
	local := localImagePath(t)
	var tools []map[string]any
	readJSON(t, mountSource(t, host, "tools"), &tools)
	for _, tool := range tools {
		argv, _ := tool["command"].([]any)
		if len(argv) == 0 {
			t.Fatalf("tool %v has no command", tool["name"])
		}
		argv[0] = local(argv[0].(string))
	}
	return writeJSON(t, filepath.Join(dir, "tools.json"), tools)
}

// localMCPConfig writes bridge's mcpServers file into dir, each stdio
// command (a path in the image) replaced by the same program built here.
func localMCPConfig(t *testing.T, bridge *service, dir string) string {
	t.Helper()
	local := localImagePath(t)
	var mcp struct {
		MCPServers map[string]map[string]any `json:"mcpServers"`
	}
	readJSON(t, mountSource(t, bridge, "mcp-config"), &mcp)
	for name, srv := range mcp.MCPServers {
		if cmd, ok := srv["command"].(string); ok {
			srv["command"] = local(cmd)
		} else {
			t.Fatalf("server %s is not a stdio server; the example runs inside the bridge's container", name)
		}
	}
	return writeJSON(t, filepath.Join(dir, "mcp.json"), mcp)
}

// callUntilAdvertised runs `switchboard call` (with the dev suite's secret) until the tool is advertised
// (the host and the bridge advertise just after the suite is up) and it
// answers, failing the test after a bound. Polling is fine here: it is a
// test waiting for processes to start.
func callUntilAdvertised(t *testing.T, bin, addr, secret, tool, input string) string {
	t.Helper()
	var answer string
	testkit.Await(t, "switchboard call "+tool, 30*time.Second, func() error {
		cmd := exec.Command(bin, "call", "--addr", addr, "--dev-secret-file", secret, "--as", "compose-test", tool, input)
		out, err := cmd.Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			return fmt.Errorf("%v\n%s%s", err, out, stderr)
		}
		answer = string(out)
		return nil
	})
	return answer
}

func readJSON(t *testing.T, file string, v any) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

func writeJSON(t *testing.T, file string, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}
