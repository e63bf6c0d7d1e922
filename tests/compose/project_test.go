// Package compose runs docker-compose.yml and docker-compose.scale.yml on
// a real container engine (`make compose-test`): up and healthy, the tour
// through the published ports, faults across containers under load, and
// `down -v` leaving nothing behind (docs/deploy.md, How the files are
// tested). Without an engine every test skips, saying how to run it.
package compose

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-run/switchboard/kit/suite/certs"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// project is one compose file brought up on the engine.
type project struct {
	t    *testing.T
	eng  testkit.Engine
	file string // the compose file, absolute
	name string // its project name (its top-level name:)
	env  []string
	// Host ports the test picks for the gateways (SWITCHBOARD_HTTP_PORT, _2).
	http, http2 string
	ids         map[string]string // service → its container's id
}

// fixedPorts are the host ports the compose files publish on 127.0.0.1
// whatever the environment says: the replicas' gRPC ports.
var fixedPorts = []string{"7731", "7732", "7733", "7741", "7742", "7743"}

// newProject readies file (relative to the repository) on the engine: no
// container, volume or network of its project left from an earlier run,
// the published ports free, and `down -v` when the test ends.
func newProject(t *testing.T, file string) *project {
	eng := testkit.ContainerEngine(t)
	root := testkit.RepoRoot(t)
	p := &project{t: t, eng: eng, file: filepath.Join(root, file), ids: map[string]string{}}
	p.http, p.http2 = freePort(t), freePort(t)
	p.env = append(os.Environ(), "SWITCHBOARD_IMAGE="+eng.Image, "SWITCHBOARD_HTTP_PORT="+p.http, "SWITCHBOARD_HTTP_PORT_2="+p.http2)
	var cfg struct{ Name string }
	if err := json.Unmarshal([]byte(p.compose("config", "--format", "json")), &cfg); err != nil || cfg.Name == "" {
		t.Fatalf("%s: the compose CLI's config names no project (%v)", file, err)
	}
	p.name = cfg.Name
	p.compose("down", "-v", "--remove-orphans")
	for _, port := range fixedPorts {
		lis, err := net.Listen("tcp", "127.0.0.1:"+port)
		if err != nil {
			t.Fatalf("%s publishes 127.0.0.1:%s, which is taken (%v): stop what listens there", file, port, err)
		}
		lis.Close()
	}
	t.Cleanup(p.down)
	return p
}

// freePort is a port of 127.0.0.1 nobody listens on now.
func freePort(t *testing.T) string {
	_, port, _ := net.SplitHostPort(testkit.FreeAddr(t))
	return port
}

// compose runs the compose CLI on the project's file and returns its
// standard output, failing the test with both outputs when it fails.
func (p *project) compose(args ...string) string {
	p.t.Helper()
	out, err := p.try(args...)
	if err != nil {
		p.t.Fatalf("compose %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// try is compose that returns the failure instead.
func (p *project) try(args ...string) (string, error) {
	argv := append(append(append([]string{}, p.eng.Compose[1:]...), "-f", p.file), args...)
	cmd := exec.Command(p.eng.Compose[0], argv...)
	cmd.Env = p.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%w\n%s%s", err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// engine runs the engine's own CLI (docker or podman).
func (p *project) engine(args ...string) string {
	p.t.Helper()
	return testkit.Run(p.t, p.eng.CLI, args...)
}

// up starts every service of the project that no profile holds back and
// waits until each is healthy (or, without a healthcheck, running; the
// certs step exited 0), running the healthchecks where the engine does not
// (healthTimer). It returns how long that took.
func (p *project) up() time.Duration {
	p.t.Helper()
	stop := healthTimer(p.t, p.eng, p.name)
	p.t.Cleanup(stop)
	began := time.Now()
	if _, err := p.try("up", "-d", "--wait", "--wait-timeout", "300"); err != nil {
		p.logs()
		p.t.Fatalf("%s did not come up healthy: %v", filepath.Base(p.file), err)
	}
	return time.Since(began).Round(100 * time.Millisecond)
}

// restart starts service's container again after a fault, as the
// engine's restart policy would after a crash, and waits until its own
// healthcheck passes. (`compose start` would run the certs step again
// first, re-minting every leaf: it starts a service's dependencies.)
func (p *project) restart(service string) time.Duration {
	p.t.Helper()
	began := time.Now()
	p.engine("start", p.container(service))
	p.healthy(service)
	return time.Since(began).Round(100 * time.Millisecond)
}

// healthy waits until service's healthcheck command, run in its container,
// passes: a check of now, whatever the engine last recorded.
func (p *project) healthy(service string) {
	p.t.Helper()
	id := p.container(service)
	var test []string
	if err := json.Unmarshal([]byte(p.engine("inspect", "--format", "{{json .Config.Healthcheck.Test}}", id)), &test); err != nil ||
		len(test) < 2 || test[0] != "CMD" {
		p.t.Fatalf("%s's healthcheck is %q; want [CMD program args…] (the image has no shell) (%v)", service, test, err)
	}
	testkit.Eventually(p.t, service+"'s healthcheck to pass", 2*time.Minute, func() bool {
		return exec.Command(p.eng.CLI, append([]string{"exec", id}, test[1:]...)...).Run() == nil
	})
}

// container is the id of service's container, which a restart keeps.
func (p *project) container(service string) string {
	p.t.Helper()
	if id, ok := p.ids[service]; ok {
		return id
	}
	id := strings.TrimSpace(p.compose("ps", "-a", "-q", service))
	if id == "" || strings.Contains(id, "\n") {
		p.t.Fatalf("compose ps %s: %q; want one container", service, id)
	}
	p.ids[service] = id
	return id
}

// kill sends service's container SIGKILL, as a crash would.
func (p *project) kill(service string) {
	p.t.Helper()
	p.engine("kill", "--signal", "KILL", p.container(service))
}

// admin copies the admin's certificate directory out of the certs
// container, as docs/deploy.md tells an operator to.
func (p *project) admin() certs.Files {
	p.t.Helper()
	return p.copyLeaf("admin")
}

// copyLeaf copies /certs/<name> out of the certs container into a
// directory of the test's.
func (p *project) copyLeaf(name string) certs.Files {
	p.t.Helper()
	dir := p.t.TempDir()
	p.compose("cp", "certs:/certs/"+name, dir)
	return certs.DirFiles(filepath.Join(dir, name))
}

// down removes the project's containers, networks and volumes, and fails
// the test when any of them is left after it. On a failed test it logs
// the containers' last lines first.
func (p *project) down() {
	if p.t.Failed() {
		p.logs()
	}
	began := time.Now()
	if _, err := p.try("down", "-v", "--remove-orphans"); err != nil {
		p.t.Errorf("compose down -v: %v", err)
	}
	label := "label=com.docker.compose.project=" + p.name
	for _, kind := range [][]string{{"ps", "-a"}, {"volume", "ls"}, {"network", "ls"}} {
		left := strings.TrimSpace(testkit.Run(p.t, p.eng.CLI, append(kind, "-q", "--filter", label)...))
		if left != "" {
			p.t.Errorf("after down -v, %s %s still lists the project's %s", p.eng.CLI, strings.Join(kind, " "), strings.Join(strings.Fields(left), ", "))
		}
	}
	p.t.Logf("%s: down -v in %v, nothing left", filepath.Base(p.file), time.Since(began).Round(100*time.Millisecond))
}

// logs logs the last lines of services (all when none), for a failure.
func (p *project) logs(services ...string) {
	out, _ := p.try(append([]string{"logs", "--no-color", "--tail", "40"}, services...)...)
	p.t.Logf("the containers' last lines:\n%s", out)
}
