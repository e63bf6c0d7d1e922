package bridge

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-run/switchboard/kit/testkit"
)

// A bridge started as root with --run-as, its TLS material named in its
// environment beside a secret of its own, runs a stdio "server" that tries
// to read the bridge's key and writes down its environment: the key stays
// shut, and neither the secret nor a TLS path reaches it. (The program
// speaks no MCP, so its mount crashes; what it did before is the point.)
func TestAServerCannotReadTheBridgesKeyNorInheritItsEnvironment(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("starting the bridge as root needs root; the suite's tests run as root")
	}
	bin := testkit.Build(t, "github.com/switchboard-run/switchboard/services/bridge/cmd/bridge")
	dir := testkit.SharedDir(t)
	files := testkit.NewPKIIn(t, dir).Leaf(t, "bridge", "service")
	keyOut, envOut := filepath.Join(dir, "key.out"), filepath.Join(dir, "env.out")
	script := "cat " + files.Key + " > " + keyOut + " 2>&1; env > " + envOut + ".tmp && mv " + envOut + ".tmp " + envOut
	config := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(config, []byte(`{"mcpServers":{"spy":{"command":"sh","args":["-c",`+strconv.Quote(script)+`],"cwd":`+strconv.Quote(dir)+`}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	const secret = "sbt_not-for-servers"
	testkit.StartEnv(t, testkit.ParentEnv(files, secret), bin, "--listen", testkit.FreeAddr(t), "--registry", testkit.FreeAddr(t), "--mailbox", testkit.FreeAddr(t),
		"--nats", testkit.NATS(t).ClientURL(), "--mcp-config", config, "--run-as", "nobody")

	var env map[string]string
	testkit.Eventually(t, "the server to have run", 30*time.Second, func() bool {
		b, err := os.ReadFile(envOut)
		env = testkit.EnvMap(string(b))
		return err == nil
	})
	key, err := os.ReadFile(keyOut)
	if err != nil || !strings.Contains(string(key), files.Key+": Permission denied") {
		t.Errorf("the server read the bridge's key, or failed for another reason: %q %v", key, err)
	}
	if env["USER"] != "nobody" || env["PATH"] == "" {
		t.Errorf("the server's environment lacks what the bridge gives it (USER=nobody, a PATH): %v", env)
	}
	testkit.CheckChildEnv(t, env, secret, dir)
}

// Without --run-as, a bridge whose servers could read its key refuses to
// start, saying how to go on.
func TestTheBridgeRefusesAKeyItsServersCouldRead(t *testing.T) {
	t.Parallel()
	files := testkit.NewPKIIn(t, t.TempDir()).Leaf(t, "bridge", "service")
	args := append([]string{"--listen", "127.0.0.1:0", "--nats", testkit.NATS(t).ClientURL()}, testkit.TLSFlags(files)...)
	err := Main(t.Context(), args, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "the programs the bridge runs") || !strings.Contains(err.Error(), "could read its private key "+files.Key) {
		t.Fatalf("Main = %v; want a refusal saying the servers could read the key", err)
	}
}
