package child

import (
	"testing"

	"github.com/switchboard-run/switchboard/kit/testkit"
)

// A server or backend the bridge runs gets an allowlisted environment: the
// fixed set the bridge takes from its own (PATH, HOME, …) and the config's
// env — never the bridge's own secrets or TLS paths. (Not parallel: it
// sets the bridge's environment.)
func TestAChildGetsAnAllowlistedEnvironmentNotTheBridges(t *testing.T) {
	t.Setenv("SWITCHBOARD_TLS_KEY", "/certs/key.pem")
	t.Setenv("GITHUB_TOKEN", "ghp_secret")
	t.Setenv("TZ", "UTC")
	cmd := Command([]string{"env"}, map[string]string{"API_KEY": "for-this-server", "TZ": "Europe/Paris"}, "", nil, 0)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	got := testkit.EnvMap(string(out))
	if got["API_KEY"] != "for-this-server" || got["TZ"] != "Europe/Paris" {
		t.Errorf("the config's env did not reach the child (the config wins over the fixed set): %v", got)
	}
	for _, k := range []string{"SWITCHBOARD_TLS_KEY", "GITHUB_TOKEN"} {
		if v, ok := got[k]; ok {
			t.Errorf("the child inherited %s=%q from the bridge", k, v)
		}
	}
	if got["PATH"] == "" {
		t.Error("the child has no PATH: launchers such as npx and uvx need one")
	}
}
