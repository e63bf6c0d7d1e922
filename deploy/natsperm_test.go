package deploy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/certs"
	"github.com/switchboard-run/switchboard/kit/suite/natsconn"
)

// The base deployment, made local, works with each service under its NATS
// permissions (docs/security.md, "NATS"): a call reaches the example host
// and the mounted server, and NATS reports no violation. Then the attacks
// fail: only a service's certificate connects, and none may write
// another's bucket (a forged admin token, a forged mount running a shell).
func TestComposeServicesWorkUnderTheirNATSPermissions(t *testing.T) {
	t.Parallel()
	l := newLoopback(t, baseFile)
	ns := l.start("nats", nil)
	l.healthy("nats")
	for _, s := range []string{"registry", "mailbox", "bridge", "gateway"} {
		l.start(s, nil)
		l.healthy(s)
	}
	l.start("example-host", nil)
	files := func(dir string) certs.Files { return certs.DirFiles(filepath.Join(l.vol, dir)) }
	admin := files(l.svcs["certs"].flags["admin"])
	call := func(tool, input string) string {
		t.Helper()
		out, _ := runUntil(t, "a call of "+tool, 90*time.Second, l.bin, "call",
			"--addr="+l.addrs["registry:7731"], "--mailbox="+l.addrs["mailbox:7732"],
			"--tls-ca="+admin.CA, "--tls-cert="+admin.Cert, "--tls-key="+admin.Key, tool, input)
		return strings.TrimSpace(out)
	}
	if got := call("example-host_echo", `{"message":"under permissions"}`); got != `{"message":"under permissions"}` {
		t.Errorf("the example host's echo printed %q", got)
	}
	if got := call("everything_test_simple_text", `{}`); !strings.Contains(got, "simple text") {
		t.Errorf("the bridge's everything server answered %q", got)
	}
	if out := ns.Output(); strings.Contains(out, "Violation") {
		t.Fatalf("NATS refused the suite's own services something:\n%s", out)
	}

	url := "tls://" + l.addrs["nats:4222"]
	dial := func(dir string) (*nats.Conn, chan error, error) {
		f := files(dir)
		violations := make(chan error, 4)
		nc, err := natsconn.Config{URLs: url, CA: f.CA, Cert: f.Cert, Key: f.Key}.Connect("attacker", slog.New(slog.DiscardHandler),
			nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { violations <- err }))
		if err == nil {
			t.Cleanup(nc.Close)
		}
		return nc, violations, err
	}
	for _, dir := range []string{"example-host", "prometheus", l.svcs["certs"].flags["admin"], "gateway"} {
		if _, _, err := dial(dir); !errors.Is(err, nats.ErrAuthorization) {
			t.Errorf("the certificate of %s connected to NATS (%v); want an authorization violation", dir, err)
		}
	}
	write := func(dir, subject string, value []byte) {
		t.Helper()
		nc, violations, err := dial(dir)
		if err != nil {
			t.Fatal(err)
		}
		js, _ := jetstream.New(nc)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if _, err := js.Publish(ctx, subject, value); err == nil {
			t.Fatalf("%s's certificate wrote %s", dir, subject)
		}
		if err := <-violations; !strings.Contains(err.Error(), subject) {
			t.Fatalf("writing %s as %s: NATS said %v", subject, dir, err)
		}
	}

	secret := "sbt_forged"
	hash := sha256.Sum256([]byte(secret))
	token, _ := proto.Marshal(&registryv1.Token{Id: "tok-f0f0f0f0", Identity: "mallory", Grade: "admin",
		Workspaces: []string{"*"}, Created: timestamppb.Now(), Expires: timestamppb.New(time.Now().Add(time.Hour))})
	write("bridge", "$KV.sb_registry.token."+hex.EncodeToString(hash[:]), token)
	write("mailbox", "$KV.sb_registry.token."+hex.EncodeToString(hash[:]), token)
	gw := l.addrs["gateway:8080"]
	client, err := admin.ClientConfig("gateway")
	if err != nil {
		t.Fatal(err)
	}
	client.Certificates = nil // the bearer token alone
	req, _ := http.NewRequest(http.MethodGet, "https://"+gw+"/v1/tokens", nil)
	req.Header.Set("Authorization", "Bearer "+secret)
	res, err := (&http.Client{Transport: &http.Transport{TLSClientConfig: client}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("the forged token listed tokens: %s; want 401", res.Status)
	}

	mount, _ := proto.Marshal(&bridgev1.MountRequest{Client: "pwn", Config: &bridgev1.ServerConfig{
		Transport: &bridgev1.ServerConfig_Stdio{Stdio: &bridgev1.StdioTransport{Command: "/bin/sh", Args: []string{"-c", "id"}}}}})
	write("registry", "$KV.sb_mounts.mount.pwn", mount)
	write("mailbox", "$KV.sb_mounts.mount.pwn", mount)
}
