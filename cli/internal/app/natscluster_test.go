package app_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-run/switchboard/kit/testkit"
)

// Three `switchboard nats` nodes with mutual TLS form one JetStream
// cluster: each dials routes to the others and verifies them against the
// suite's CA, so every node's JetStream answers (it has a leader). Each
// node's leaf is minted by certs suite --replicas, naming 127.0.0.1 too.
// A node's /healthz (--health-addr) fails while it is alone, without a
// leader, and passes once the cluster has formed.
func TestNATSNodesFormAClusterOverTLS(t *testing.T) {
	t.Parallel()
	bin := testkit.Build(t, module+"cli/cmd/switchboard")
	dir := t.TempDir()
	if _, stderr, code := run(t, bin, "certs", "suite", "--dir", dir, "--replicas", "nats=3"); code != 0 {
		t.Fatalf("certs suite: %s", stderr)
	}
	var clients, routes, healths []string
	for range 3 {
		clients, routes = append(clients, testkit.FreeAddr(t)), append(routes, testkit.FreeAddr(t))
		healths = append(healths, testkit.FreeAddr(t))
	}
	health := func(i int) (string, bool) {
		out, err := exec.Command(bin, "health", "--http=http://"+healths[i]).CombinedOutput()
		return strings.TrimSpace(string(out)), err == nil
	}
	tlsFlags := func(node string) []string {
		d := filepath.Join(dir, node)
		return []string{"--tls-ca=" + filepath.Join(d, "ca.pem"), "--tls-cert=" + filepath.Join(d, "cert.pem"), "--tls-key=" + filepath.Join(d, "key.pem")}
	}
	for i := range 3 {
		var others []string
		for j := range 3 {
			if j != i {
				others = append(others, routes[j])
			}
		}
		node := fmt.Sprintf("nats-%d", i+1)
		testkit.Start(t, bin, append([]string{"nats", "--name=" + node, "--cluster=test",
			"--cluster-listen=" + routes[i], "--routes=" + strings.Join(others, ","),
			"--cluster-advertise=" + routes[i], "--health-addr=" + healths[i],
			"--listen=" + clients[i], "--data=" + filepath.Join(dir, "data", node)}, tlsFlags(node)...)...)
		if i > 0 {
			continue
		}
		var said string
		testkit.Eventually(t, "the lone node's /healthz to answer", 30*time.Second, func() bool {
			var ok bool
			said, ok = health(0)
			if ok {
				t.Fatalf("a cluster node alone, without a leader, is healthy: %s", said)
			}
			return strings.Contains(said, "is not ready")
		})
		t.Logf("nats-1 alone: %s", said)
	}
	for i, addr := range clients {
		node := fmt.Sprintf("nats-%d", i+1)
		var last []byte
		testkit.Eventually(t, node+"'s JetStream to answer", 60*time.Second, func() bool {
			out, err := exec.Command(bin, append([]string{"health", "--nats=tls://" + addr}, tlsFlags(node)...)...).CombinedOutput()
			last = out
			return err == nil
		})
		t.Logf("%s: %s", node, strings.TrimSpace(string(last)))
		testkit.Eventually(t, node+"'s /healthz to pass", 60*time.Second, func() bool {
			_, ok := health(i)
			return ok
		})
	}
	if _, stderr, code := run(t, bin, "nats", "--data", dir, "--health-addr", "0.0.0.0:8222", "--dev"); code == 0 || !strings.Contains(stderr, "--health-addr") {
		t.Fatalf("a health listener off loopback: exit %d, %q", code, stderr)
	}
}
