package run

import (
	"testing"

	"github.com/switchboard-run/switchboard/kit/testkit"
	"github.com/switchboard-run/switchboard/services/host/internal/toolsfile"
)

// A tool gets an allowlisted environment: the fixed set the host takes
// from its own (PATH, HOME, …), the tool's env from the tools file, and the
// protocol's variables — never the host's own secrets or TLS paths.
// (Not parallel: it sets the host's environment.)
func TestAToolGetsAnAllowlistedEnvironmentNotTheHosts(t *testing.T) {
	t.Setenv("SWITCHBOARD_TLS_KEY", "/certs/key.pem")
	t.Setenv("SWITCHBOARD_NATS_CREDS", "/secret/nats.creds")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "hunter2")
	t.Setenv("LANG", "C.UTF-8")
	tools, err := toolsfile.Parse([]byte(`[{"name":"t","description":"","input_schema":{"type":"object"},
		"command":["env"],"env":{"GREETING":"hi","PATH":"/usr/bin:/bin"}}]`), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := Run(t.Context(), &tools[0], Invocation{ID: "inv-1", Tool: "t", Input: "{}", Delivery: 2}, lim)
	if c.GetExitCode() != 0 {
		t.Fatalf("env: %v", c)
	}
	got := testkit.EnvMap(c.GetStdout())
	want := map[string]string{"GREETING": "hi", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8",
		"SWITCHBOARD_INVOCATION": "inv-1", "SWITCHBOARD_TOOL": "t", "SWITCHBOARD_DELIVERY": "2", "SWITCHBOARD_ANSWERS_FD": "3"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("the tool's %s = %q, want %q", k, got[k], v)
		}
	}
	for k := range got {
		if _, ok := want[k]; ok {
			continue
		}
		switch k {
		case "HOME", "LC_ALL", "LOGNAME", "SHELL", "TERM", "TMPDIR", "TZ", "USER":
		default:
			t.Errorf("the tool inherited %s=%q from the host", k, got[k])
		}
	}
}
