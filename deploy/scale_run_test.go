package deploy

import (
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-run/switchboard/kit/testkit"
)

// loopback runs a compose file's services as processes on this machine,
// with their own command lines: only what names a place is rewritten — a
// container's host:port becomes a loopback address of its own, a file in a
// container the file the certs step (run here) or the repository provides.
type loopback struct {
	t     *testing.T
	bin   string
	svcs  map[string]*service
	vol   string            // where the certs step's command wrote its material
	addrs map[string]string // "nats-1:4222", "nats-1:6222", "registry-1:7731" → 127.0.0.1:port
	dir   string
}

func newLoopback(t *testing.T, file string) *loopback {
	svcs := services(t, loadComposeFile(t, file, nil))
	l := &loopback{t: t, bin: testkit.Build(t, switchboardPkg), svcs: svcs, vol: t.TempDir(), addrs: map[string]string{}, dir: t.TempDir()}
	mintInto(t, l.bin, svcs["certs"], l.vol)
	for name, s := range svcs {
		for _, f := range []string{"listen", "cluster-listen", "metrics-addr", "health-addr"} {
			if addr, ok := s.flags[f]; ok && addr != "" && (f != "cluster-listen" || s.flags["cluster"] != "") {
				_, port, _ := net.SplitHostPort(addr)
				l.addrs[net.JoinHostPort(name, port)] = testkit.FreeAddr(t)
			}
		}
	}
	return l
}

// hostPort is a host:port in a flag's value (after a scheme, in a list).
var hostPort = regexp.MustCompile(`[a-z0-9.-]+:[0-9]+`)

// args is s's command line (or, with health, its healthcheck's) made
// local. via maps an alias to the replica this process reaches through it
// (compose's DNS gives it either). --run-as gives way to
// --children-may-read-key: it does not change what is dialed.
func (l *loopback) args(s *service, health bool, via map[string]string) []string {
	l.t.Helper()
	words := []string(s.cfg.Command)
	if health {
		words = s.cfg.HealthCheck.Test[2:]
	}
	var out []string
	for _, w := range words {
		k, v, ok := strings.Cut(strings.TrimPrefix(w, "--"), "=")
		switch {
		case !ok || !strings.HasPrefix(w, "--"):
			out = append(out, w)
			continue
		case k == "run-as":
			// Becoming the image's user needs root and paths it may
			// read; the programs run here are the test's own.
			out = append(out, "--children-may-read-key")
			continue
		case k == "tls-ca" || k == "tls-cert" || k == "tls-key" || strings.HasPrefix(k, "nats-tls-") || strings.HasPrefix(k, "metrics-tls-"):
			v = certsLocal(l.t, l.svcs["certs"], s, v, l.vol)
		case k == "data":
			v = filepath.Join(l.dir, s.name)
		case k == "tools":
			v = localTools(l.t, s, l.dir)
		case k == "mcp-config":
			v = localMCPConfig(l.t, s, l.dir)
		default:
			v = hostPort.ReplaceAllStringFunc(v, func(hp string) string {
				host, port, _ := net.SplitHostPort(hp)
				if host == "0.0.0.0" || host == "127.0.0.1" {
					host = s.name // its own listener
				} else if r, ok := via[host]; ok {
					host = r
				}
				addr, ok := l.addrs[net.JoinHostPort(host, port)]
				if !ok {
					l.t.Fatalf("%s names %s, which no process here serves", s.name, hp)
				}
				return addr
			})
		}
		out = append(out, "--"+k+"="+v)
	}
	return out
}

// start runs service name with its command line made local.
func (l *loopback) start(name string, via map[string]string) *testkit.Proc {
	l.t.Helper()
	return testkit.Start(l.t, l.bin, l.args(l.svcs[name], false, via)...)
}

// healthy waits for name's healthcheck, as compose runs it, to pass.
func (l *loopback) healthy(name string) {
	l.t.Helper()
	runUntil(l.t, name+"'s healthcheck", 90*time.Second, l.bin, l.args(l.svcs[name], true, nil)...)
}

// runUntil runs bin args until it exits 0, failing the test after timeout
// with its last output; it returns the output and how long it took.
func runUntil(t *testing.T, what string, timeout time.Duration, bin string, args ...string) (string, time.Duration) {
	t.Helper()
	start := time.Now()
	var out []byte
	failed := false
	testkit.Await(t, what, timeout, func() error {
		var err error
		if out, err = exec.Command(bin, args...).CombinedOutput(); err != nil {
			failed = true
			return fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
		}
		return nil
	})
	if failed {
		t.Logf("%s: succeeded after %v", what, time.Since(start).Round(time.Millisecond))
	}
	return string(out), time.Since(start)
}

// The scale deployment survives losing a NATS node and a mailbox replica:
// its three NATS nodes and two registry and mailbox replicas run with their
// compose command lines; a call made through one mailbox replica reaches a
// host following the other; then a node and a replica are killed and a
// call through the survivor still reaches the host.
func TestScaleSurvivesLosingANATSNodeAndAMailbox(t *testing.T) {
	t.Parallel()
	l := newLoopback(t, scaleFile)
	nodes := map[string]*testkit.Proc{}
	for _, n := range replicasOf(l.svcs, "nats") {
		nodes[n] = l.start(n, nil)
	}
	for _, n := range replicasOf(l.svcs, "nats") {
		l.healthy(n)
	}
	// Every replica reaches the others through the first replica's
	// address; the host goes through the second ones.
	first := map[string]string{"registry": "registry-1", "mailbox": "mailbox-1"}
	second := map[string]string{"registry": "registry-2", "mailbox": "mailbox-2"}
	// One after the other, in the order the file's depends_on says.
	procs := map[string]*testkit.Proc{}
	for _, r := range []string{"registry-1", "registry-2", "mailbox-1", "mailbox-2"} {
		procs[r] = l.start(r, first)
		l.healthy(r)
	}
	host := replicasOf(l.svcs, "host")[0]
	l.start(host, second)

	admin := filepath.Join(l.vol, l.svcs["certs"].flags["admin"])
	call := func(what, registry, mailbox string) (string, time.Duration) {
		t.Helper()
		return runUntil(t, what, 90*time.Second, l.bin, "call",
			"--addr="+registry, "--registry="+registry, "--mailbox="+mailbox,
			"--tls-ca="+filepath.Join(admin, "ca.pem"), "--tls-cert="+filepath.Join(admin, "cert.pem"), "--tls-key="+filepath.Join(admin, "key.pem"),
			host+"_echo", `{"message":"`+what+`"}`)
	}
	want := func(got, what string) {
		t.Helper()
		if strings.TrimSpace(got) != `{"message":"`+what+`"}` {
			t.Errorf("the call printed %q; want the input back", got)
		}
	}
	got, took := call("through mailbox-1 to a host on mailbox-2", l.addrs["registry-1:7731"], l.addrs["mailbox-1:7732"])
	want(got, "through mailbox-1 to a host on mailbox-2")
	t.Logf("first call answered %v after the host started (advertising included)", took)
	// The replicas' requests to each other and their streams' consumers
	// all passed under the services' NATS permissions (docs/security.md).
	for name, n := range nodes {
		if out := n.Output(); strings.Contains(out, "Violation") {
			t.Errorf("NATS node %s refused the suite's own services something:\n%s", name, out)
		}
	}

	nodes["nats-1"].Kill()
	procs["mailbox-1"].Kill()
	got, took = call("after losing nats-1 and mailbox-1", l.addrs["registry-1:7731"], l.addrs["mailbox-2:7732"])
	want(got, "after losing nats-1 and mailbox-1")
	t.Logf("with nats-1 and mailbox-1 killed, a call through mailbox-2 answered %v after the kill", took)
}
