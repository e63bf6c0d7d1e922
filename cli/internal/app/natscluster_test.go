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
func TestNATSNodesFormAClusterOverTLS(t *testing.T) {
	t.Parallel()
	bin := testkit.Build(t, module+"cli/cmd/switchboard")
	dir := t.TempDir()
	if _, stderr, code := run(t, bin, "certs", "suite", "--dir", dir, "--replicas", "nats=3"); code != 0 {
		t.Fatalf("certs suite: %s", stderr)
	}
	var clients, routes []string
	for range 3 {
		clients, routes = append(clients, testkit.FreeAddr(t)), append(routes, testkit.FreeAddr(t))
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
			"--listen=" + clients[i], "--data=" + filepath.Join(dir, "data", node)}, tlsFlags(node)...)...)
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
	}
}
